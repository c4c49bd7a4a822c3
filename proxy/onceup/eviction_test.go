package onceup

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/oncekv/oncekv/internal/testredis"
)

// TestEvictionWarning: at Start, the engine reads the upstream's
// maxmemory-policy and warns unless it is noeviction (an evicted running
// record lets a second runner in, an evicted answer runs the key again).
func TestEvictionWarning(t *testing.T) {
	for _, tc := range []struct {
		policy string
		warn   bool
	}{
		{"allkeys-lru", true},
		{"volatile-ttl", true},
		{"noeviction", false},
	} {
		t.Run(tc.policy, func(t *testing.T) {
			s := testredis.Standalone(t, "--maxmemory-policy", tc.policy)
			core, logs := observer.New(zapcore.DebugLevel)
			c := redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: 2, MaxRetries: -1})
			defer c.Close()
			e := New(c, Config{Logger: zap.New(core)})
			if err := e.Start(); err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			eventually(t, 5*time.Second, "the policy read", func() bool {
				return logs.FilterMessageSnippet("evict").Len() > 0
			})
			warned := logs.FilterLevelExact(zapcore.WarnLevel).FilterMessageSnippet("maxmemory-policy noeviction").Len() > 0
			if warned != tc.warn {
				t.Fatalf("maxmemory-policy %s: warned %v, want %v; logs: %v", tc.policy, warned, tc.warn, logs.All())
			}
			if tc.warn {
				entry := logs.FilterLevelExact(zapcore.WarnLevel).All()[0]
				if got := entry.ContextMap()["maxmemory-policy"]; got != tc.policy || !strings.Contains(entry.Message, "evict") {
					t.Fatalf("warning %q %v", entry.Message, entry.ContextMap())
				}
			}
		})
	}
}
