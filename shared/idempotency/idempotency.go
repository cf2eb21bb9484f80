// Package idempotency gives every POST exactly-once semantics under client
// retries, concurrency and crashes (docs/idempotency.md).
//
// A request with an Idempotency-Key claims (merchant, key) with one
// conditional write. A duplicate of a finished request gets the stored
// response byte-for-byte; a duplicate of a running one gets
// apperr.IdempotencyInFlight; a different request with the same key gets
// apperr.IdempotencyMismatch. Results are stored
// only once the upstream has been called (its answer would not change);
// otherwise the key is released so a corrected request or a retry after a
// 5xx runs again, and the upstream call carries a key derived from
// (merchant, key, request) so the upstream never charges twice.
package idempotency

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/yp/paysvc/shared/apperr"
	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/storeerr"
)

// Header names.
const (
	Header         = "Idempotency-Key"
	HeaderReplayed = "Idempotent-Replayed"
)

// Defaults.
const (
	// DefaultLease bounds how long a crashed request blocks its key. It must
	// exceed the longest request (upstream timeout 20 s + margin).
	DefaultLease = 60 * time.Second
	// DefaultRetention is how long completed keys are replayed: the
	// upstream keeps its keys at least 31 days, so the service remembers
	// a key as long (a request retried within the upstream's window is
	// answered by the service, never by an upstream replay alone).
	DefaultRetention = 31 * 24 * time.Hour
	maxKeyLen        = 255
)

// Service claims, completes and releases keys.
type Service struct {
	store     Store
	clock     clock.Clock
	lease     time.Duration
	retention time.Duration
	log       *slog.Logger
}

// New returns a Service; zero durations pick the defaults.
func New(s Store, clk clock.Clock, lease, retention time.Duration, log *slog.Logger) *Service {
	if lease <= 0 {
		lease = DefaultLease
	}
	if retention <= 0 {
		retention = DefaultRetention
	}
	return &Service{store: s, clock: clk, lease: lease, retention: retention, log: log}
}

// ParseKey validates an Idempotency-Key header value: 1–255 printable ASCII
// characters; the quotes of the structured-field string form are removed.
func ParseKey(v string) (string, error) {
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		v = v[1 : len(v)-1]
	}
	if v == "" {
		return "", apperr.InvalidField("Idempotency-Key", "must not be empty")
	}
	if len(v) > maxKeyLen {
		return "", apperr.InvalidField("Idempotency-Key", fmt.Sprintf("must be at most %d characters", maxKeyLen))
	}
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 || v[i] > 0x7e {
			return "", apperr.InvalidField("Idempotency-Key", "must be printable ASCII")
		}
	}
	return v, nil
}

// Fingerprint identifies a request: method, path and canonical JSON body
// (object keys sorted, insignificant whitespace dropped), so a retry that
// re-serialises the same JSON still matches.
func Fingerprint(method, path string, body []byte) string {
	h := sha256.New()
	var room [256]byte // method and path on the stack (a conversion of over 32 bytes allocates)
	h.Write(append(append(append(append(room[:0], method...), 0), path...), 0))
	h.Write(canonicalJSON(body))
	var sum [sha256.Size]byte
	var out [2 * sha256.Size]byte
	hex.Encode(out[:], h.Sum(sum[:0]))
	return string(out[:])
}

// UpstreamKey derives the Idempotency-Key sent upstream from the merchant
// (scope), its key and the request's fingerprint: the same request retried
// sends the same key, and a key reused for another request — possible once
// the service has forgotten it, while the upstream may still remember it —
// sends another, so the upstream can never replay one operation's answer
// for another. 43 characters of base64url SHA-256, within the upstream's
// 64-character limit.
func UpstreamKey(scope, key, fingerprint string) string {
	var room [512]byte // the hashed bytes on the stack (keys are at most 255 characters)
	b := append(room[:0], "paysvc/v2\x00"...)
	b = append(append(b, scope...), 0)
	b = append(append(b, key...), 0)
	b = append(b, fingerprint...)
	sum := sha256.Sum256(b)
	var out [43]byte // base64.RawURLEncoding.EncodedLen(sha256.Size)
	base64.RawURLEncoding.Encode(out[:], sum[:])
	return string(out[:])
}

// Lease is a claimed key, held by one request.
type Lease struct {
	scope, key, token string
}

// Begin claims key for the request fingerprinted fp. Exactly one of the
// results is set: a Lease (run the request, then Finish), a Response to
// replay, or an error (apperr.IdempotencyInFlight, apperr.IdempotencyMismatch, or a store failure).
func (s *Service) Begin(ctx context.Context, scope, key, fp string) (*Lease, *Response, error) {
	now := s.clock.Now()
	token, err := newToken()
	if err != nil {
		return nil, nil, apperr.Wrap(apperr.Internal, "internal error", err)
	}
	existing, err := s.store.Claim(ctx, Record{
		Scope: scope, Key: key, Fingerprint: fp, Status: StatusInProgress,
		LeaseToken: token, LeaseUntil: now.Add(s.lease), ExpiresAt: now.Add(s.retention),
	}, now)
	switch {
	case err == nil:
		return &Lease{scope: scope, key: key, token: token}, nil, nil
	case !errors.Is(err, storeerr.ErrConflict):
		return nil, nil, apperr.Wrap(apperr.Internal, "internal error", fmt.Errorf("claim idempotency key: %w", err))
	case existing.Fingerprint != fp:
		return nil, nil, apperr.New(apperr.IdempotencyMismatch, "Idempotency-Key was already used with a different request (method, path or body)")
	case existing.Status == StatusCompleted && existing.Response != nil && now.Before(existing.ExpiresAt):
		return nil, existing.Response, nil
	}
	return nil, nil, apperr.New(apperr.IdempotencyInFlight, "a request with this Idempotency-Key is still in progress; retry later")
}

// Finish ends a lease. When keep is true the response is stored for replay;
// otherwise the key is released. Failures are logged, not returned: the
// caller's response stands, and an unreleased lease expires by itself.
func (s *Service) Finish(ctx context.Context, l *Lease, resp Response, keep bool) {
	ctx = context.WithoutCancel(ctx)
	if keep {
		if err := s.store.Complete(ctx, l.scope, l.key, l.token, resp, s.clock.Now().Add(s.retention)); err != nil {
			s.log.ErrorContext(ctx, "idempotency: storing the result failed; a retry after the lease re-runs against the upstream's idempotency",
				"err", err.Error())
		}
		return
	}
	if err := s.store.Release(ctx, l.scope, l.key, l.token); err != nil {
		s.log.ErrorContext(ctx, "idempotency: releasing the key failed; it frees itself when the lease ends", "err", err.Error())
	}
}

// Keep reports whether a response must be stored: 2xx always; a 400 only
// when the upstream was called (its validation answer is deterministic).
func Keep(status int, upstreamCalled bool) bool {
	return (status >= 200 && status < 300) || (status == 400 && upstreamCalled)
}

func newToken() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("lease token: %w", err)
	}
	var out [32]byte
	hex.Encode(out[:], b[:])
	return string(out[:]), nil
}
