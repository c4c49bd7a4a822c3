package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/oncekv/oncekv/internal/testserver"
	"github.com/oncekv/oncekv/kv"
)

// setup starts an in-process oncekv (with a password, as in
// docker-compose.yml), a client configured from REDIS_ADDR and
// REDIS_PASSWORD as main does, and the handler with process.
func setup(t *testing.T, process Processor) (*httptest.Server, *redis.Client) {
	t.Helper()
	a := testserver.Start(t, "--requirepass", "s3cret")
	env := map[string]string{"REDIS_ADDR": a.Addr().String(), "REDIS_PASSWORD": "s3cret"}
	rdb := clientFromEnv(func(k string) string { return env[k] })
	t.Cleanup(func() { rdb.Close() })
	store := kv.New(rdb)
	t.Cleanup(func() { store.Close() })
	h, err := NewHandler(rdb, store, process, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h.Routes())
	t.Cleanup(srv.Close)
	return srv, rdb
}

type response struct {
	status   int
	replayed string
	receipt  Receipt
	body     string
}

func deliver(t *testing.T, url, id, body string) response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/webhook", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if id != "" {
		req.Header.Set("X-Delivery-ID", id)
	}
	req.Header.Set("X-Event", "order.paid")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return response{}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	r := response{status: resp.StatusCode, replayed: resp.Header.Get("Idempotent-Replayed"), body: string(b)}
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(b, &r.receipt); err != nil {
			t.Errorf("receipt %q: %v", b, err)
		}
	}
	return r
}

// A delivery is processed once; its retries, sequential or concurrent,
// get the same receipt.
func TestWebhookDedupes(t *testing.T) {
	var runs atomic.Int64
	release := make(chan struct{})
	srv, rdb := setup(t, func(ctx context.Context, d Delivery) (string, error) {
		runs.Add(1)
		<-release
		return "charged " + d.ID, nil
	})

	var wg sync.WaitGroup
	got := make([]response, 10)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i] = deliver(t, srv.URL, "d-1", `{"order":42}`)
		}()
	}
	time.Sleep(200 * time.Millisecond) // let them all arrive while the first runs
	close(release)
	wg.Wait()
	replays := 0
	for _, r := range got {
		if r.status != http.StatusOK {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		if r.receipt != got[0].receipt {
			t.Errorf("receipts differ: %+v vs %+v", r.receipt, got[0].receipt)
		}
		if r.replayed == "true" {
			replays++
		}
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("processed %d times, want 1", n)
	}
	if replays != len(got)-1 {
		t.Errorf("%d replays, want %d", replays, len(got)-1)
	}
	rc := got[0].receipt
	if rc.DeliveryID != "d-1" || rc.Event != "order.paid" || rc.Result != "charged d-1" || len(rc.BodySHA256) != 64 || rc.ProcessedAt.IsZero() {
		t.Errorf("receipt %+v", rc)
	}

	// A later retry: the stored receipt, nothing runs.
	again := deliver(t, srv.URL, "d-1", `{"order":42}`)
	if again.status != http.StatusOK || again.replayed != "true" || again.receipt != rc || runs.Load() != 1 {
		t.Errorf("retry: %+v, runs %d", again, runs.Load())
	}
	// Kept for 7 days on the server.
	ttl, err := rdb.PTTL(context.Background(), "webhook:d-1").Result()
	if err != nil || ttl <= 7*24*time.Hour-time.Minute || ttl > 7*24*time.Hour {
		t.Errorf("PTTL webhook:d-1 = %v %v, want about 7 days", ttl, err)
	}
	// Another delivery runs.
	if r := deliver(t, srv.URL, "d-2", `{"order":43}`); r.status != http.StatusOK || r.replayed != "false" || runs.Load() != 2 {
		t.Errorf("d-2: %+v, runs %d", r, runs.Load())
	}
}

func TestWebhookRefusals(t *testing.T) {
	var fail atomic.Bool
	fail.Store(true)
	var runs atomic.Int64
	srv, _ := setup(t, func(ctx context.Context, d Delivery) (string, error) {
		runs.Add(1)
		if fail.Load() {
			return "", errors.New("payment provider down")
		}
		return "ok", nil
	})
	// A failed processing stores nothing: 500, and the retry runs again.
	if r := deliver(t, srv.URL, "d-9", "x"); r.status != http.StatusInternalServerError || !strings.Contains(r.body, "payment provider down") {
		t.Errorf("failing processor: %+v", r)
	}
	fail.Store(false)
	if r := deliver(t, srv.URL, "d-9", "x"); r.status != http.StatusOK || r.replayed != "false" || runs.Load() != 2 {
		t.Errorf("retry after a failure: %+v, runs %d", r, runs.Load())
	}
	// The same ID with another body is not answered with the first receipt.
	if r := deliver(t, srv.URL, "d-9", "y"); r.status != http.StatusConflict {
		t.Errorf("reused ID: %+v", r)
	}
	if r := deliver(t, srv.URL, "", "x"); r.status != http.StatusBadRequest {
		t.Errorf("no ID: %+v", r)
	}
	if r := deliver(t, srv.URL, "big", strings.Repeat("z", MaxBody+1)); r.status != http.StatusRequestEntityTooLarge {
		t.Errorf("big body: %d", r.status)
	}
	resp, err := http.Get(srv.URL + "/webhook")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /webhook: %d", resp.StatusCode)
	}
	resp, err = http.Get(srv.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /healthz: %d", resp.StatusCode)
	}
}

// Without the password (REDIS_PASSWORD unset) the health check says so.
func TestWebhookHealthzWithoutPassword(t *testing.T) {
	a := testserver.Start(t, "--requirepass", "s3cret")
	rdb := clientFromEnv(func(k string) string {
		if k == "REDIS_ADDR" {
			return a.Addr().String()
		}
		return ""
	})
	defer rdb.Close()
	store := kv.New(rdb)
	defer store.Close()
	h, err := NewHandler(rdb, store, process, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.Routes().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "NOAUTH") {
		t.Errorf("healthz without password: %d %q", rec.Code, rec.Body.String())
	}
}
