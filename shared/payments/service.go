// Package payments is the service's payment domain: from typed inputs (the
// app layer, shared/paymentsapp, decodes and validates the merchant's JSON)
// it adds what the service controls (merchant account, splits, country,
// shopper interaction, routing metadata), calls the upstream and keeps
// session and payment records. It knows neither HTTP nor a storage format:
// its ports are Store and Upstream.
package payments

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/yp/paysvc/shared/apperr"
	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/tenant"
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
	metrics     interface{ RecordUpdateLost(kind string) }
	sleeper     Sleeper // see SleepWith
}

// NewService returns a Service.
func NewService(s Store, up Upstream, clk clock.Clock, log *slog.Logger) *Service {
	return &Service{store: s, up: up, clock: clk, log: log, recordRetry: defaultRecordRetry, sleeper: realTime{}}
}

// defaultRecordRetry is how long a record write after the upstream's
// answer keeps retrying store failures: the answer waits for it, so it
// stays well inside API Gateway's 29 s.
const defaultRecordRetry = 10 * time.Second

// RetryRecordWritesFor sets how long a record write after the upstream's
// answer retries store failures (0: once; conflicts are always retried)
// before it is lost.
func (s *Service) RetryRecordWritesFor(d time.Duration) *Service {
	s.recordRetry = d
	return s
}

// SleepWith sets what waits between the retries of an operation's
// request that lost to concurrent changes (reserve): real time
// unless set; a test counts the waits on its own clock.
func (s *Service) SleepWith(sl Sleeper) *Service {
	s.sleeper = sl
	return s
}

// CountRecordUpdates sets where the record writes after an upstream answer
// that were lost (the store refused them for the whole retry window) are
// counted, by kind: EMF in Lambda, alarmed (nil: nowhere).
func (s *Service) CountRecordUpdates(m interface{ RecordUpdateLost(kind string) }) *Service {
	s.metrics = m
	return s
}

// Call is one request's per-call facts, passed explicitly to every payment
// operation (never through the context): who calls and the upstream
// idempotency key going in; whether the upstream was called and the record
// writes that follow its answer coming out. One Call serves one operation;
// use it by pointer.
type Call struct {
	Merchant tenant.Merchant
	Site     tenant.Site
	// UpstreamKey is the Idempotency-Key sent to the upstream, derived from
	// the merchant's (idempotency.UpstreamKey); "" when the merchant sent
	// none.
	UpstreamKey string

	upstreamCalled bool
	records        sync.WaitGroup
	mu             sync.Mutex
	errs           []error
}

// UpstreamCalled reports whether the operation reached the upstream: from
// then on its result is the upstream's (idempotency keeps it).
func (c *Call) UpstreamCalled() bool { return c.upstreamCalled }

// Wait waits for the record writes the operation started after the
// upstream answered and returns the errors of those that were lost (each
// logged and counted when it was). The operation's result stands whatever
// they return: the upstream has acted, and what repairs each lost write
// is in docs/payments.md.
func (c *Call) Wait() error {
	c.records.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	return errors.Join(c.errs...)
}

// callUpstream marks the call as having reached the upstream and returns
// the idempotency key to send with it. Call it just before sending.
func (c *Call) callUpstream() string {
	c.upstreamCalled = true
	return c.UpstreamKey
}

// after starts write, a record write of what the upstream answered, of
// kind for payment (or session) psp, alongside the rest of the request
// (c.Wait): s.record makes it.
func (s *Service) after(ctx context.Context, c *Call, kind, psp string, write func(context.Context) error) {
	ctx = context.WithoutCancel(ctx)
	c.records.Go(func() {
		if err := s.record(ctx, kind, psp, write); err != nil {
			c.mu.Lock()
			c.errs = append(c.errs, err)
			c.mu.Unlock()
		}
	})
}

// record makes write, a record write of kind for psp after the upstream
// answered. The upstream has acted, so it is not given up lightly: the
// merchant hanging up does not cancel it, write retries conflicts itself,
// and store failures are retried with backoff for s.recordRetry. One that
// still fails then is lost: logged at ERROR and counted (RecordUpdateLost).
// errForeign (the payment is another site's) is returned at once.
func (s *Service) record(ctx context.Context, kind, psp string, write func(context.Context) error) error {
	ctx = context.WithoutCancel(ctx)
	start := time.Now()
	for attempt := 1; ; attempt++ {
		err := write(ctx)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, errForeign):
			return err
		case errors.Is(err, errRefused) || time.Since(start) >= s.recordRetry:
			s.log.ErrorContext(ctx, "record write after the upstream answered failed", "record", kind, "pspReference", psp,
				"attempts", attempt, "err", err.Error())
			if s.metrics != nil {
				s.metrics.RecordUpdateLost(kind)
			}
			return fmt.Errorf("record %s %s after the upstream answered (%d attempts): %w", kind, psp, attempt, err)
		}
		s.log.WarnContext(ctx, "record write failed; retrying", "record", kind, "pspReference", psp, "attempt", attempt, "err", err.Error())
		time.Sleep(min(recordBackoff<<min(attempt-1, 6), time.Second))
	}
}

// recordBackoff is record's first wait after a store failure.
const recordBackoff = 20 * time.Millisecond

// errRefused: a record write that can never apply (its payment unknown,
// or no request of its operation recorded). Retrying it is useless.
var errRefused = errors.New("payments: record write refused")

// errForeign: a payment or details answer names a payment of another
// merchant or site; it is not recorded.
var errForeign = fmt.Errorf("%w: the payment belongs to another merchant or site", errRefused)

// Upstream is the port to the checkout platform, in the domain's own
// terms: the domain decides what each call carries (merchant account,
// splits, routing metadata, country, shopper interaction, the idempotency
// key) and the adapter (shared/upstream/connector) translates it to the
// platform's wire format and its answers back. Errors the adapter returns
// are classified with ErrUpstreamInFlight and *UpstreamRejection; anything
// else is a failure without a definitive answer (retry with the same key).
type Upstream interface {
	CreateSession(ctx context.Context, req SessionRequest) (SessionAnswer, error)
	PaymentMethods(ctx context.Context, req PaymentMethodsRequest) (PaymentMethodsResult, error)
	Pay(ctx context.Context, req PaymentRequest) (PaymentAnswer, error)
	Details(ctx context.Context, req DetailsRequest) (PaymentAnswer, error)
	Modify(ctx context.Context, req ModificationRequest) (ModificationAnswer, error)
	DeleteStoredMethod(ctx context.Context, req DeleteStoredMethodRequest) error
}

// ErrUpstreamInFlight: the platform is still processing a request with the
// same idempotency key.
var ErrUpstreamInFlight = errors.New("payments: the upstream is still processing a request with this idempotency key")

// UpstreamRejection is the platform's deterministic refusal of a request
// (sending it again gets the same answer), with its message.
type UpstreamRejection struct {
	Message string
	// NotFound: the platform does not know what the request names.
	NotFound bool
	Err      error // the adapter's error, for logs
}

func (e *UpstreamRejection) Error() string { return e.Err.Error() }

func (e *UpstreamRejection) Unwrap() error { return e.Err }

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

// storeError passes domain errors through and wraps store failures.
func storeError(err error) error {
	if err == nil {
		return nil
	}
	var e *apperr.Error
	if errors.As(err, &e) {
		return e
	}
	if errors.Is(err, errBusy) {
		return apperr.Wrap(apperr.PaymentBusy, "too many concurrent changes to this payment; retry with the same Idempotency-Key", err)
	}
	return apperr.Wrap(apperr.Internal, "internal error", err)
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

// routingMetadata identifies merchant, site and flow in upstream calls.
func routingMetadata(m tenant.Merchant, site tenant.Site, src Source) map[string]string {
	return map[string]string{MetaMerchant: m.ID, MetaSite: site.ID, MetaSource: string(src)}
}

// SplitKind says who a Split pays.
type SplitKind int

// Split kinds.
const (
	splitMerchant   SplitKind = iota // the merchant's balance account
	SplitCommission                  // the platform's commission
)

// Split is one part of an amount and the account it goes to.
type Split struct {
	Kind        SplitKind
	Account     string
	Value       int64
	Currency    string
	Reference   string
	Description string
}

// commission returns the platform's cut of value for merchant m: basis
// points (rounded down, in the merchant's favour) plus the fixed part,
// never more than value.
func commission(m tenant.Merchant, value int64) int64 {
	c := value*m.CommissionBps/10_000 + m.CommissionFixed
	return min(max(c, 0), value)
}

// splits returns the split instructions for an amount: the merchant's
// balance account gets amount − commission, the platform the commission.
// They always sum to the amount. A zero amount has no splits.
func splits(m tenant.Merchant, a money.Amount, reference string) []Split {
	if a.Value == 0 {
		return nil
	}
	c := commission(m, a.Value)
	out := make([]Split, 0, 2)
	merchantRef, commissionRef := splitRefs(reference)
	if rest := a.Value - c; rest > 0 {
		out = append(out, Split{Kind: splitMerchant, Account: m.SplitAccount, Value: rest, Currency: a.Currency,
			Reference: merchantRef, Description: "Merchant share"})
	}
	if c > 0 {
		out = append(out, Split{Kind: SplitCommission, Account: m.CommissionAccount, Value: c, Currency: a.Currency,
			Reference: commissionRef, Description: "Platform commission"})
	}
	return out
}

// splitRefs are the references of the merchant's and the commission's
// parts: ref + "-merchant" and ref + "-commission", each at most 80
// characters (the end kept), made in one allocation.
func splitRefs(ref string) (merchant, commission string) {
	both := ref + "-merchant" + ref + "-commission"
	n := len(ref) + len("-merchant")
	return last80(both[:n]), last80(both[n:])
}

func last80(r string) string {
	if len(r) > 80 {
		r = r[len(r)-80:]
	}
	return r
}

// LineItem is one line of an order. Amounts are in minor units;
// TaxPercentage in minor units of a percent (2100 for 21 %).
type LineItem struct {
	ID                 string
	Description        string
	Quantity           int64
	AmountExcludingTax *int64
	AmountIncludingTax *int64
	TaxAmount          *int64
	TaxPercentage      *int64
	ProductURL         string
	ImageURL           string
	ItemCategory       string
	SKU                string
	Brand              string
	Color              string
	Size               string
	Manufacturer       string
	UPC                string
}
