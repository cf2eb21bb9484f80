// Package payments is the service's payment domain: from typed inputs (the
// app layer, shared/paymentsapp, decodes and validates the merchant's JSON)
// it adds what the service controls (merchant account, splits, country,
// shopper interaction, routing metadata), calls the upstream and keeps
// session and payment records. It knows neither HTTP nor a storage format:
// its ports are Store and Upstream.
package payments

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"time"

	"github.com/yp/paysvc/shared/apperr"
	"github.com/yp/paysvc/shared/clock"
)

// Metadata keys the service adds to every upstream call so notifications can
// be routed back to the merchant and site. They are stripped before
// notifications are forwarded to merchants.
const (
	MetaMerchant = "merchantId"
	MetaSite     = "siteId"
	MetaSource   = "paymentSource"
)

// Service runs the payment operations.
type Service struct {
	store       Store
	up          Upstream
	clock       clock.Clock
	log         *slog.Logger
	recordRetry time.Duration // see RetryRecordWritesFor
	metrics     RecordMetrics
	sleeper     Sleeper // see SleepWith
}

// NewService returns a Service.
func NewService(s Store, up Upstream, clk clock.Clock, log *slog.Logger) *Service {
	return &Service{store: s, up: up, clock: clk, log: log, recordRetry: DefaultRecordRetry, sleeper: RealTime{}}
}

// DefaultRecordRetry is how long a record write after the upstream's
// answer keeps retrying store failures: the answer waits for it, so it
// stays well inside API Gateway's 29 s.
const DefaultRecordRetry = 10 * time.Second

// RetryRecordWritesFor sets how long a record write after the upstream's
// answer retries store failures (0: once; conflicts are always retried)
// before it is lost.
func (s *Service) RetryRecordWritesFor(d time.Duration) *Service {
	s.recordRetry = d
	return s
}

// SleepWith sets what waits between the retries of an operation's
// request that lost to concurrent changes (entries.go reserve): RealTime
// unless set; a test counts the waits on its own clock.
func (s *Service) SleepWith(sl Sleeper) *Service {
	s.sleeper = sl
	return s
}

// CountRecordUpdates sets where lost record writes are counted (nil:
// nowhere).
func (s *Service) CountRecordUpdates(m RecordMetrics) *Service {
	s.metrics = m
	return s
}

// RecordMetrics counts the record writes after an upstream answer that
// were lost (the store refused them for the whole retry window): EMF in
// Lambda, alarmed.
type RecordMetrics interface {
	RecordUpdateLost(kind string)
}

// reference returns the caller's reference or generates one. Under an
// Idempotency-Key it is derived from the key, so a retry sends the upstream
// the same request.
func reference(c *Call, given, prefix string) string {
	if given != "" {
		return given
	}
	if k := c.UpstreamKey; k != "" {
		return prefix + k[:24]
	}
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// upstreamError maps an upstream failure to the endpoint's error: the
// upstream's deterministic rejections become apperr.Invalid with its
// message; an in-flight duplicate apperr.IdempotencyInFlight; everything
// else (5xx, timeouts, connection errors, our own credentials refused) the
// endpoint's failure kind.
func upstreamError(err error, failed apperr.Kind, what string) error {
	if errors.Is(err, ErrUpstreamInFlight) {
		return apperr.Wrap(apperr.IdempotencyInFlight, "the upstream is still processing a request with this Idempotency-Key; retry later", err)
	}
	if e := (*UpstreamRejection)(nil); errors.As(err, &e) {
		msg := e.Message
		if msg == "" {
			msg = "request rejected by the payment platform"
		}
		return apperr.Wrap(apperr.Invalid, msg, err)
	}
	return apperr.Wrap(failed, what+" failed; retry with the same Idempotency-Key", err)
}

// sessionTTL is how long a session record is kept for routing (the
// upstream's sessions expire after 1 hour; payments may notify later).
const sessionTTL = 30 * 24 * time.Hour
