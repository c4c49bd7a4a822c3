// Command webhook is an example app for oncekv: an HTTP webhook receiver
// that processes each delivery once and answers the sender's retries with
// the stored receipt (kv.OpenOnce, kept 7 days).
//
//	REDIS_ADDR=localhost:6379 REDIS_PASSWORD=… go run ./examples/webhook
//	curl -i -X POST -H 'X-Delivery-ID: d-1' -d '{"order":42}' localhost:8080/webhook
//
// Environment: REDIS_ADDR (default localhost:6379), REDIS_PASSWORD
// (default none), LISTEN_ADDR (default :8080). docker-compose.yml at the
// repository root runs it next to oncekv.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/oncekv/oncekv/kv"
)

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(log); err != nil {
		log.Error("webhook", "err", err)
		os.Exit(1)
	}
}

// clientFromEnv is the Redis client of REDIS_ADDR and REDIS_PASSWORD.
func clientFromEnv(getenv func(string) string) *redis.Client {
	addr := getenv("REDIS_ADDR")
	if addr == "" {
		addr = "localhost:6379"
	}
	return redis.NewClient(&redis.Options{Addr: addr, Password: getenv("REDIS_PASSWORD")})
}

func run(log *slog.Logger) error {
	rdb := clientFromEnv(os.Getenv)
	defer rdb.Close()
	store := kv.New(rdb)
	defer store.Close()
	h, err := NewHandler(rdb, store, process, log)
	if err != nil {
		return err
	}
	addr := os.Getenv("LISTEN_ADDR")
	if addr == "" {
		addr = ":8080"
	}
	srv := &http.Server{Addr: addr, Handler: h.Routes(), ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	log.Info("listening", "addr", addr, "redis", rdb.Options().Addr)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shut); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// process stands for the real work a delivery triggers.
func process(ctx context.Context, d Delivery) (string, error) {
	select {
	case <-time.After(100 * time.Millisecond): // the work
	case <-ctx.Done():
		return "", ctx.Err()
	}
	return fmt.Sprintf("processed %d bytes", len(d.Body)), nil
}
