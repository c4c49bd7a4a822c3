package metrics_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/redis/go-redis/v9"

	"github.com/oncekv/oncekv/internal/testserver"
)

// scrape fetches and parses http://addr/metrics.
func scrape(t *testing.T, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: %s\n%s", resp.Status, body)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type = %q, want text/plain (the Prometheus text format)", ct)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("parse the scrape: %v\n%s", err, body)
	}
	return fams
}

// value finds the sample of family name whose labels are exactly labels
// ("k=v" pairs); ok is false when there is none.
func value(fams map[string]*dto.MetricFamily, name string, labels ...string) (*dto.Metric, bool) {
	f := fams[name]
	if f == nil {
		return nil, false
	}
next:
	for _, m := range f.Metric {
		if len(m.Label) != len(labels) {
			continue
		}
		for i, l := range m.Label {
			if l.GetName()+"="+l.GetValue() != labels[i] {
				continue next
			}
		}
		return m, true
	}
	return nil, false
}

func number(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	m, ok := value(fams, name, labels...)
	if !ok {
		t.Errorf("no sample %s%v", name, labels)
		return -1
	}
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Untyped != nil:
		return m.Untyped.GetValue()
	}
	t.Errorf("%s%v is neither a counter nor a gauge", name, labels)
	return -1
}

func TestMetricsEndpoint(t *testing.T) {
	a := testserver.Start(t, "--metrics-addr", "127.0.0.1:0")
	maddr := a.MetricsAddr()
	if maddr == nil {
		t.Fatal("MetricsAddr is nil with --metrics-addr")
	}
	ctx := context.Background()
	newClient := func() *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: a.Addr().String(), Protocol: 2, DisableIdentity: true,
			PoolSize: 1, MaxRetries: -1})
		t.Cleanup(func() { c.Close() })
		return c
	}
	c := newClient()
	must := func(cmd redis.Cmder) {
		t.Helper()
		if err := cmd.Err(); err != nil && err != redis.Nil {
			t.Fatalf("%v: %v", cmd.Args(), err)
		}
	}
	must(c.Set(ctx, "a", "1", 0))
	must(c.Set(ctx, "e", "1", time.Hour))
	must(c.Get(ctx, "a"))
	must(c.Get(ctx, "missing"))
	must(c.Incr(ctx, "a"))
	must(c.Set(ctx, "s", "x", 0))
	if err := c.Incr(ctx, "s").Err(); err == nil || !strings.HasPrefix(err.Error(), "ERR") {
		t.Fatalf("INCR s: %v, want an ERR", err)
	}
	if err := c.Do(ctx, "NOSUCHCOMMAND").Err(); err == nil {
		t.Fatalf("NOSUCHCOMMAND did not fail")
	}
	if err := c.Do(ctx, "GET").Err(); err == nil {
		t.Fatalf("GET without a key did not fail")
	}
	// db 2 through its own connection (SELECT is per connection).
	c2 := redis.NewClient(&redis.Options{Addr: a.Addr().String(), Protocol: 2, DisableIdentity: true, DB: 2, PoolSize: 1})
	t.Cleanup(func() { c2.Close() })
	must(c2.Set(ctx, "b", "1", 0))

	// ONCE: a claim completed, a replay, and a waiter blocked on a
	// running key while we scrape.
	claim := c.Do(ctx, "ONCE.CLAIM", "job")
	must(claim)
	tok := claim.Val().([]any)[1].(int64)
	must(c.Do(ctx, "ONCE.COMPLETE", "job", tok, "result"))
	must(c.Do(ctx, "ONCE.CLAIM", "job"))
	claim2 := c.Do(ctx, "ONCE.CLAIM", "job2")
	must(claim2)
	tok2 := claim2.Val().([]any)[1].(int64)
	waiter := newClient()
	woken := make(chan error, 1)
	go func() { woken <- waiter.Do(ctx, "ONCE.WAIT", "job2", "TIMEOUT", "30000").Err() }()

	var fams map[string]*dto.MetricFamily
	deadline := time.Now().Add(5 * time.Second)
	for {
		fams = scrape(t, maddr.String())
		if v, ok := value(fams, "oncekv_blocked_clients"); ok && v.Gauge.GetValue() == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("oncekv_blocked_clients never became 1 while a client waits in ONCE.WAIT")
		}
		time.Sleep(20 * time.Millisecond)
	}

	for _, tc := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"oncekv_commands_total", []string{"cmd=get"}, 2},
		{"oncekv_commands_total", []string{"cmd=set"}, 4},
		{"oncekv_commands_total", []string{"cmd=incr"}, 2},
		{"oncekv_commands_failed_total", []string{"cmd=incr"}, 1},
		{"oncekv_commands_rejected_total", []string{"cmd=get"}, 1},
		{"oncekv_commands_total", []string{"cmd=once.claim"}, 3},
		{"oncekv_commands_total", []string{"cmd=once.complete"}, 1},
		{"oncekv_error_replies_by_code_total", []string{"code=ERR"}, 3},
		{"oncekv_error_replies_total", nil, 3},
		{"oncekv_keyspace_hits_total", nil, 1},
		{"oncekv_keyspace_misses_total", nil, 1},
		{"oncekv_connected_clients", nil, 3},
		{"oncekv_blocked_clients", nil, 1},
		{"oncekv_db_keys", []string{"db=0"}, 5},          // a e s job job2
		{"oncekv_db_keys_expiring", []string{"db=0"}, 2}, // e, and job2's lease
		{"oncekv_db_keys", []string{"db=2"}, 1},
		{"oncekv_once_claims_total", nil, 2},
		{"oncekv_once_completes_total", nil, 1},
		{"oncekv_once_replays_total", nil, 1},
		{"oncekv_once_waits_total", nil, 1},
		{"oncekv_once_waiting_clients", nil, 1},
		{"oncekv_once_running_keys", nil, 1},
		{"oncekv_slowlog_length", nil, 0},
		{"oncekv_store_writes_refused", nil, 0},
	} {
		if got := number(t, fams, tc.name, tc.labels...); got != tc.want {
			t.Errorf("%s%v = %v, want %v", tc.name, tc.labels, got, tc.want)
		}
	}
	for _, name := range []string{"oncekv_commands_processed_total", "oncekv_connections_received_total",
		"oncekv_net_input_bytes_total", "oncekv_net_output_bytes_total", "oncekv_store_committed_writes_total",
		"oncekv_store_lsm_size_bytes", "oncekv_store_vlog_size_bytes", "oncekv_store_pending_writes",
		"oncekv_once_aborts_total", "oncekv_once_lease_lapses_total", "oncekv_once_handoffs_total",
		"oncekv_once_stale_rejects_total", "oncekv_once_mismatches_total", "oncekv_once_wakeups_total",
		"oncekv_rejected_connections_total", "oncekv_expired_keys_total", "oncekv_build_info",
		"go_goroutines", "process_cpu_seconds_total"} {
		if fams[name] == nil {
			t.Errorf("no metric family %s", name)
		}
	}
	if n := number(t, fams, "oncekv_net_input_bytes_total"); n <= 0 {
		t.Errorf("oncekv_net_input_bytes_total = %v, want > 0", n)
	}

	// The latency histogram of GET: two observations, cumulative buckets
	// ending with +Inf at the count, a positive sum.
	m, ok := value(fams, "oncekv_command_duration_seconds", "cmd=get")
	if !ok || m.Histogram == nil {
		t.Fatalf("no histogram oncekv_command_duration_seconds{cmd=get}")
	}
	h := m.Histogram
	if h.GetSampleCount() != 2 || h.GetSampleSum() <= 0 {
		t.Errorf("GET latency: count %d sum %v, want 2 and > 0", h.GetSampleCount(), h.GetSampleSum())
	}
	var prev uint64
	for _, b := range h.Bucket {
		if b.GetCumulativeCount() < prev {
			t.Errorf("GET latency buckets are not cumulative: %v", h.Bucket)
		}
		prev = b.GetCumulativeCount()
	}
	if prev > 2 {
		t.Errorf("GET latency: last finite bucket %d > count 2", prev)
	}
	if fams["oncekv_command_duration_seconds"].GetType() != dto.MetricType_HISTOGRAM {
		t.Errorf("oncekv_command_duration_seconds is a %v", fams["oncekv_command_duration_seconds"].GetType())
	}

	// The waiter is woken; the gauges go back to 0.
	must(c.Do(ctx, "ONCE.COMPLETE", "job2", tok2, "done"))
	if err := <-woken; err != nil {
		t.Fatalf("ONCE.WAIT: %v", err)
	}
	fams = scrape(t, maddr.String())
	for _, name := range []string{"oncekv_blocked_clients", "oncekv_once_waiting_clients", "oncekv_once_running_keys"} {
		if got := number(t, fams, name); got != 0 {
			t.Errorf("%s = %v after the waiter was woken, want 0", name, got)
		}
	}
	if got := number(t, fams, "oncekv_once_wakeups_total"); got != 1 {
		t.Errorf("oncekv_once_wakeups_total = %v, want 1", got)
	}

	// CONFIG GET shows the directive as configured.
	if got := c.ConfigGet(ctx, "metrics-addr").Val()["metrics-addr"]; got != "127.0.0.1:0" {
		t.Errorf("CONFIG GET metrics-addr = %q", got)
	}

	// Close stops the endpoint.
	if err := a.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	client := &http.Client{Timeout: 2 * time.Second}
	if resp, err := client.Get(fmt.Sprintf("http://%s/metrics", maddr)); err == nil {
		resp.Body.Close()
		t.Errorf("the metrics endpoint still answers after Close")
	}
}

// TestMetricsOffByDefault: without --metrics-addr nothing listens.
func TestMetricsOffByDefault(t *testing.T) {
	a := testserver.Start(t)
	if addr := a.MetricsAddr(); addr != nil {
		t.Fatalf("MetricsAddr = %v without --metrics-addr", addr)
	}
}

// TestMetricsBadAddress: an address that cannot be listened on is a
// startup error, and nothing is left running.
func TestMetricsBadAddress(t *testing.T) {
	_, err := testserver.StartErr(t, "--metrics-addr", "127.0.0.1:notaport")
	if err == nil || !strings.Contains(err.Error(), "metrics-addr") {
		t.Fatalf("start with a bad metrics-addr: %v, want an error naming metrics-addr", err)
	}
}

// TestMetricsConcurrent runs commands on several connections while other
// clients scrape, read INFO everything and the slow log, reset the
// statistics and change the slow log's settings: under -race, the
// counters are shared safely.
func TestMetricsConcurrent(t *testing.T) {
	a := testserver.Start(t, "--metrics-addr", "127.0.0.1:0", "--slowlog-log-slower-than", "0", "--slowlog-max-len", "16")
	ctx := context.Background()
	stop := time.Now().Add(500 * time.Millisecond)
	errs := make(chan error, 8)
	worker := func(id int, fn func(c *redis.Client, i int) error) {
		c := redis.NewClient(&redis.Options{Addr: a.Addr().String(), Protocol: 2 + id%2, DisableIdentity: true, PoolSize: 1})
		defer c.Close()
		for i := 0; time.Now().Before(stop); i++ {
			if err := fn(c, i); err != nil {
				errs <- fmt.Errorf("worker %d: %w", id, err)
				return
			}
		}
		errs <- nil
	}
	for w := 0; w < 4; w++ {
		go worker(w, func(c *redis.Client, i int) error {
			k := fmt.Sprint("k", i%10)
			c.Set(ctx, k, i, 0)
			c.Get(ctx, k)
			c.Incr(ctx, "s") // an error once "s" holds a non-number
			c.Do(ctx, "NOSUCH")
			_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Incr(ctx, "n")
				p.Get(ctx, k)
				return nil
			})
			if err != nil && !strings.HasPrefix(err.Error(), "ERR") {
				return err
			}
			return nil
		})
	}
	go worker(4, func(c *redis.Client, i int) error {
		if err := c.Info(ctx, "everything").Err(); err != nil {
			return err
		}
		if err := c.Do(ctx, "SLOWLOG", "GET", "-1").Err(); err != nil {
			return err
		}
		if i%5 == 0 {
			c.ConfigResetStat(ctx)
			c.ConfigSet(ctx, "slowlog-max-len", fmt.Sprint(i%7))
		}
		return nil
	})
	go worker(5, func(c *redis.Client, i int) error {
		resp, err := http.Get("http://" + a.MetricsAddr().String() + "/metrics")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		p := expfmt.NewTextParser(model.UTF8Validation)
		_, err = p.TextToMetricFamilies(resp.Body)
		return err
	})
	for w := 0; w < 6; w++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
