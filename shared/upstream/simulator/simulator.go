package simulator

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/upstream"
)

// maxBodyBytes bounds request bodies.
const maxBodyBytes = 4 << 20

// Simulator simulates the upstream checkout API. Create it with New, serve it
// as an http.Handler and Close it when done. It is safe for concurrent use.
type Simulator struct {
	opts          Options
	base          string
	clock         clock.Clock
	ids           *ids
	log           *slog.Logger
	signer        *upstream.Signer
	manualCapture map[string]bool
	multiCapture  map[string]bool
	merchants     map[string]bool
	mux           *http.ServeMux
	idem          *idemStore
	disp          *dispatcher
	offset        *atomic.Int64 // AdvanceClock, in nanoseconds
	saveMu        sync.Mutex    // one write of the state file at a time

	mu            sync.Mutex
	payments      map[string]*payment
	paymentOrder  []string
	modRefs       map[string]string // modification pspReference → payment pspReference
	sessions      map[string]*session
	actions       map[string]*action
	actionsByData map[string]*action
	tokens        map[tokenKey][]*storedMethod
	requests      map[string]int
	emitted       []upstream.NotificationRequestItem
	actionSeq     int
	failures      map[string][]Failure
}

// New returns a Simulator for opts; it starts the notification sender, so
// call Close when done.
func New(opts Options) (*Simulator, error) {
	if opts.BasePath == "" {
		opts.BasePath = DefaultBasePath
	}
	base := "/" + strings.Trim(opts.BasePath, "/")
	if base == "/" || strings.ContainsAny(base, " {}") {
		return nil, fmt.Errorf("simulator: invalid base path %q", opts.BasePath)
	}
	if opts.HangTimeout <= 0 {
		opts.HangTimeout = DefaultHangTimeout
	}
	if opts.SessionTTL <= 0 {
		opts.SessionTTL = DefaultSessionTTL
	}
	if opts.OfferTTL <= 0 {
		opts.OfferTTL = DefaultOfferTTL
	}
	if opts.Clock == nil {
		opts.Clock = clock.System{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	opts.PublicURL = strings.TrimRight(opts.PublicURL, "/")
	offset := new(atomic.Int64)
	s := &Simulator{
		opts:          opts,
		base:          base,
		clock:         offsetClock{base: opts.Clock, offset: offset},
		offset:        offset,
		ids:           newIDs(opts.Rand),
		log:           opts.Logger,
		manualCapture: setOf(opts.ManualCaptureAccounts),
		multiCapture:  setOf(opts.MultiplePartialCaptureAccounts),
		merchants:     setOf(opts.MerchantAccounts),
		mux:           http.NewServeMux(),
		idem:          newIdemStore(opts.hooks.keySettled),
		payments:      map[string]*payment{},
		modRefs:       map[string]string{},
		sessions:      map[string]*session{},
		actions:       map[string]*action{},
		actionsByData: map[string]*action{},
		tokens:        map[tokenKey][]*storedMethod{},
		requests:      map[string]int{},
		failures:      map[string][]Failure{},
	}
	if opts.HMACKeyHex != "" {
		signer, err := upstream.NewSigner(opts.HMACKeyHex)
		if err != nil {
			return nil, fmt.Errorf("simulator: HMACKeyHex: %w", err)
		}
		s.signer = signer
	}
	if err := s.restore(); err != nil {
		return nil, err
	}
	s.routes()
	s.disp = newDispatcher(opts.Notifier, opts.Faults, opts.Logger, opts.hooks.delivered)
	return s, nil
}

func setOf(xs []string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// BasePath returns the path prefix of the API routes, e.g. "/v71".
func (s *Simulator) BasePath() string { return s.base }

// ServeHTTP implements http.Handler.
func (s *Simulator) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Close stops the notification sender; undelivered notifications are
// abandoned (call Flush first to deliver them).
func (s *Simulator) Close() error {
	s.disp.close()
	return nil
}

func (s *Simulator) routes() {
	b := s.base
	s.mux.Handle("POST "+b+"/sessions", s.api("sessions", s.handleSessions))
	s.mux.Handle("POST "+b+"/paymentMethods", s.api("paymentMethods", s.handlePaymentMethods))
	s.mux.Handle("POST "+b+"/payments", s.api("payments", s.handlePayments))
	s.mux.Handle("POST "+b+"/payments/details", s.api("payments/details", s.handleDetails))
	s.mux.Handle("POST "+b+"/payments/{psp}/captures", s.api("captures", s.modification(true, s.capture)))
	s.mux.Handle("POST "+b+"/payments/{psp}/reversals", s.api("reversals", s.modification(false, s.reversal)))
	s.mux.Handle("POST "+b+"/payments/{psp}/cancels", s.api("cancels", s.modification(false, s.cancel)))
	s.mux.Handle("POST "+b+"/payments/{psp}/amountUpdates", s.api("amountUpdates", s.modification(true, s.amountUpdate)))
	s.mux.Handle("POST "+b+"/payments/{psp}/refunds", s.api("refunds", s.modification(true, s.refundRequest)))
	s.mux.Handle("DELETE "+b+"/storedPaymentMethods/{id}", s.api("storedPaymentMethods", s.handleDeleteStored))
	s.hookRoutes()
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { writeResult(w, errorResult(errNotFound())) })
}

// call is one authenticated API request.
type call struct {
	r      *http.Request
	body   []byte
	apiKey string
	public string // absolute base URL for links back to the simulator
}

// apiHandler handles one API request and returns its complete answer.
type apiHandler func(ctx context.Context, c *call) result

// api wraps h with latency, request counting, authentication, body reading
// and idempotency.
func (s *Simulator) api(name string, h apiHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ctx := r.Context()
		s.count(name)
		if f := s.takeFailure(name); f != "" {
			if f == FailTimeout {
				// Held until the client gives up; nothing is processed.
				if h := s.opts.hooks.holding; h != nil {
					h(name)
				}
				_ = sleep(ctx, s.opts.HangTimeout)
			}
			writeResult(w, errorResult(errInternal()))
			return
		}
		if s.opts.Latency > 0 {
			if sleep(ctx, s.opts.Latency) != nil {
				return
			}
		}
		res, replayed := s.serveAPI(ctx, r, h)
		s.persist()
		if key := r.Header.Get("Idempotency-Key"); key != "" {
			w.Header().Set("Idempotency-Key", key)
		}
		writeResult(w, res)
		s.log.LogAttrs(ctx, slog.LevelInfo, "upstream-sim request",
			slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.String("endpoint", name),
			slog.Int("status", res.status), slog.Bool("replayed", replayed),
			slog.Duration("latency", time.Since(start)))
	})
}

func (s *Simulator) serveAPI(ctx context.Context, r *http.Request, h apiHandler) (result, bool) {
	key := r.Header.Get("X-API-Key")
	if !s.authorised(key) {
		return errorResult(errUnauthorized()), false
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes+1))
	if err != nil {
		return errorResult(errParse("unreadable body")), false
	}
	if len(body) > maxBodyBytes {
		return errorResult(&apiError{Status: http.StatusRequestEntityTooLarge, ErrorCode: codeGeneric, Message: "Request too large", ErrorType: "validation"}), false
	}
	c := &call{r: r, body: body, apiKey: key, public: s.publicURL(r)}
	idemKey := r.Header.Get("Idempotency-Key")
	if r.Method != http.MethodPost || idemKey == "" {
		return h(ctx, c), false
	}
	if len(idemKey) > upstream.MaxIdempotencyKeyLen {
		return errorResult(validationError(codeGeneric, "Idempotency-Key exceeds 64 characters")), false
	}
	fp := sha256.Sum256(slices.Concat([]byte(r.Method+" "+r.URL.Path+"\n"), body))
	return s.idem.do(key, idemKey, fp, s.clock.Now(), s.opts.StrictIdempotency, func() result { return h(ctx, c) })
}

// authorised checks the X-API-Key header value.
func (s *Simulator) authorised(key string) bool {
	return key != "" && (s.opts.APIKey == "" || key == s.opts.APIKey)
}

func (s *Simulator) count(name string) {
	s.mu.Lock()
	s.requests[name]++
	s.mu.Unlock()
}

// Requests returns how many requests reached an endpoint: "sessions",
// "paymentMethods", "payments", "payments/details", "captures",
// "reversals", "cancels", "amountUpdates", "refunds" or "storedPaymentMethods" (idempotent
// replays and rejected requests included).
func (s *Simulator) Requests(endpoint string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[endpoint]
}

func (s *Simulator) publicURL(r *http.Request) string {
	if s.opts.PublicURL != "" {
		return s.opts.PublicURL
	}
	if r == nil || r.Host == "" {
		return "http://upstream-sim.invalid"
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

func writeResult(w http.ResponseWriter, res result) {
	if res.status == http.StatusNoContent {
		w.WriteHeader(res.status)
		return
	}
	w.Header().Set("Content-Type", "application/json;charset=UTF-8")
	w.WriteHeader(res.status)
	_, _ = w.Write(res.body)
}

// decodeJSON decodes an API request body, matching member names exactly
// (unmarshal).
func decodeJSON(body []byte, v any) *apiError {
	if len(body) == 0 {
		return errParse("empty body")
	}
	if err := unmarshal(body, v); err != nil {
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &syn):
			return errParse(fmt.Sprintf("malformed JSON at offset %d", syn.Offset))
		case errors.As(err, &typ):
			return errParse(fmt.Sprintf("field %q must be %s", typ.Field, typ.Type))
		default:
			return errParse("malformed JSON")
		}
	}
	return nil
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// checkMerchant validates a request's merchantAccount.
func (s *Simulator) checkMerchant(ma string) *apiError {
	if ma == "" {
		return validationError(codeMerchant, "Required field 'merchantAccount' is not provided.")
	}
	if len(s.merchants) > 0 && !s.merchants[ma] {
		return &apiError{Status: http.StatusForbidden, ErrorCode: codeMerchant, Message: "Invalid Merchant Account", ErrorType: "security"}
	}
	return nil
}

// uniquePSP returns a pspReference not yet used (caller holds s.mu).
func (s *Simulator) uniquePSP() string {
	for {
		if p := s.ids.psp(); s.payments[p] == nil && s.modRefs[p] == "" {
			return p
		}
	}
}

// Failure is an injected failure of one upstream request.
type Failure string

// Failures FailNext injects.
const (
	// FailHTTP500 answers HTTP 500 with an upstream error body; nothing is
	// processed.
	FailHTTP500 Failure = "500"
	// FailTimeout holds the request until the client gives up (or
	// HangTimeout) and processes nothing.
	FailTimeout Failure = "timeout"
)

// Endpoints are the names of the upstream endpoints, as Requests and
// FailNext take them.
var Endpoints = []string{"sessions", "paymentMethods", "payments", "payments/details", "captures", "reversals", "cancels", "amountUpdates", "refunds", "storedPaymentMethods"}

// FailNext makes the next request to endpoint (one of Endpoints) fail
// with f; calls queue up, one failure per request.
func (s *Simulator) FailNext(endpoint string, f Failure) error {
	if !slices.Contains(Endpoints, endpoint) {
		return fmt.Errorf("simulator: unknown endpoint %q", endpoint)
	}
	if f != FailHTTP500 && f != FailTimeout {
		return fmt.Errorf("simulator: unknown failure %q", f)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures[endpoint] = append(s.failures[endpoint], f)
	return nil
}

// takeFailure pops the next injected failure of endpoint.
func (s *Simulator) takeFailure(endpoint string) Failure {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.failures[endpoint]
	if len(q) == 0 {
		return ""
	}
	s.failures[endpoint] = q[1:]
	return q[0]
}
