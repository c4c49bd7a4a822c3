package config

import (
	"strings"
	"testing"
)

// The proxy-mode directives: upstream (immutable, its password masked in
// CONFIG GET) and once-wait-replicas.
func TestUpstreamDirectives(t *testing.T) {
	c, err := Load([]string{"--upstream", "redis-cluster://:s3cret@a:7000,b:7001", "--once-wait-replicas", "1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Upstream != "redis-cluster://:s3cret@a:7000,b:7001" || c.OnceWaitReplicas != 1 {
		t.Errorf("upstream %q, once-wait-replicas %d", c.Upstream, c.OnceWaitReplicas)
	}
	d := c.Directives()
	if d["upstream"] != "redis-cluster://:***@a:7000,b:7001" || d["once-wait-replicas"] != "1" {
		t.Errorf("CONFIG GET upstream %q once-wait-replicas %q", d["upstream"], d["once-wait-replicas"])
	}
	env, err := Load(nil, []string{"ONCEKV_UPSTREAM=redis://h:6379", "ONCEKV_ONCE_WAIT_REPLICAS=2"})
	if err != nil || env.Upstream != "redis://h:6379" || env.OnceWaitReplicas != 2 {
		t.Errorf("from the environment: %+v %v", env, err)
	}
	for _, bad := range [][]string{
		{"--upstream", "h:6379"},
		{"--upstream", "http://h:6379"},
		{"--once-wait-replicas", "-1"},
		{"--once-wait-replicas", "x"},
	} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("%q accepted", strings.Join(bad, " "))
		}
	}
	for _, name := range []string{"upstream", "once-wait-replicas"} {
		if _, err := Default().WithSet([][2]string{{name, "x"}}); err == nil || !strings.Contains(err.Error(), "immutable") {
			t.Errorf("CONFIG SET %s: %v, want immutable", name, err)
		}
	}
	for in, want := range map[string]string{
		"redis://h:1":               "redis://h:1",
		"redis://user:pw@h:1":       "redis://user:***@h:1",
		"redis://pw@h:1":            "redis://:***@h:1",
		"redis-sentinel://:p@s:1/m": "redis-sentinel://:***@s:1/m",
		"":                          "",
	} {
		if got := MaskPassword(in); got != want {
			t.Errorf("MaskPassword(%q) = %q, want %q", in, got, want)
		}
	}
}
