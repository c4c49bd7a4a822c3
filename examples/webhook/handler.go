package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/oncekv/oncekv/kv"
)

// Keep is how long a delivery's receipt is kept: a retry within it gets
// the receipt back instead of a second processing. Webhook senders retry
// for up to a few days; a week covers them.
const Keep = 7 * 24 * time.Hour

// MaxBody bounds a delivery's body.
const MaxBody = 1 << 20

// Delivery is one webhook delivery.
type Delivery struct {
	// ID is the sender's delivery ID (the X-Delivery-ID header): the same
	// for every retry of one delivery.
	ID    string
	Event string // the X-Event header, if any
	Body  []byte
}

// Receipt is what processing a delivery produced; it is stored once and
// returned to the retries.
type Receipt struct {
	DeliveryID  string    `json:"delivery_id"`
	Event       string    `json:"event,omitempty"`
	BodySHA256  string    `json:"body_sha256"`
	Result      string    `json:"result"`
	ProcessedAt time.Time `json:"processed_at"`
}

// Processor does the delivery's work (charge, e-mail, update an order…).
// It runs once per delivery ID while the receipt is kept; an error means
// "not done": the sender's retry runs it again. Pass d.ID on to
// downstream services as an idempotency key too, which covers a crash
// between the work and the storing of the receipt.
type Processor func(ctx context.Context, d Delivery) (result string, err error)

// Handler receives webhooks: POST /webhook, and GET /healthz.
type Handler struct {
	rdb        redis.UniversalClient
	deliveries *kv.Once[Receipt]
	process    Processor
	now        func() time.Time
	log        *slog.Logger
}

// NewHandler returns a handler that dedupes deliveries on store.
func NewHandler(rdb redis.UniversalClient, store *kv.Store, process Processor, log *slog.Logger) (*Handler, error) {
	deliveries, err := kv.OpenOnce[Receipt](store, "webhook", kv.Keep(Keep))
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Handler{rdb: rdb, deliveries: deliveries, process: process, now: time.Now, log: log}, nil
}

// Routes is the handler's HTTP routes.
func (h *Handler) Routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /webhook", h.webhook)
	mux.HandleFunc("GET /healthz", h.healthz)
	return mux
}

// webhook processes a delivery once: the first request for an ID runs
// the Processor and stores its receipt (kept for Keep); retries, even
// concurrent ones, get that receipt with "Idempotent-Replayed: true". The body's
// SHA-256 is the key's fingerprint, so an ID reused for another body is
// refused (409) rather than answered with someone else's receipt.
func (h *Handler) webhook(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get("X-Delivery-ID")
	if id == "" || len(id) > 200 {
		http.Error(w, "missing or too long X-Delivery-ID header", http.StatusBadRequest)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "reading the body: "+err.Error(), http.StatusBadRequest)
		return
	}
	sum := sha256.Sum256(body)
	digest := hex.EncodeToString(sum[:])
	d := Delivery{ID: id, Event: r.Header.Get("X-Event"), Body: body}
	info, err := h.deliveries.WithFingerprint("sha256:"+digest).RunInfo(r.Context(), id,
		func(ctx context.Context) (Receipt, error) {
			result, err := h.process(ctx, d)
			if err != nil {
				return Receipt{}, err
			}
			return Receipt{DeliveryID: id, Event: d.Event, BodySHA256: digest, Result: result, ProcessedAt: h.now().UTC()}, nil
		})
	switch {
	case errors.Is(err, kv.ErrMismatch):
		http.Error(w, "this delivery ID was already used for a different body", http.StatusConflict)
		return
	case errors.Is(err, kv.ErrRunFailed), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		// The run this request waited for failed, or the request ended:
		// nothing is stored, the sender's retry runs it again.
		w.Header().Set("Retry-After", "1")
		http.Error(w, "not processed, retry: "+err.Error(), http.StatusServiceUnavailable)
		return
	case err != nil:
		h.log.Error("delivery not processed", "delivery", id, "err", err)
		http.Error(w, "not processed: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Idempotent-Replayed", fmt.Sprint(info.Replayed))
	_ = json.NewEncoder(w).Encode(info.Value)
}

func (h *Handler) healthz(w http.ResponseWriter, r *http.Request) {
	if err := h.rdb.Ping(r.Context()).Err(); err != nil {
		http.Error(w, "redis: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	_, _ = io.WriteString(w, "ok\n")
}
