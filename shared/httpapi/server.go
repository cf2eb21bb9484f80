// Package httpapi is the service's HTTP surface: routing, authentication,
// tenancy, rate limiting, idempotency, error mapping and request logs. The
// same handlers serve the Lambda functions (through the lambda adapter) and
// the local server: one code path for both.
package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"sync"

	"github.com/yp/paysvc/shared/apperr"
	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/idempotency"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/ratelimit"
	"github.com/yp/paysvc/shared/tenant"
)

// MaxBodyBytes is the largest request body accepted (docs/architecture.md).
const MaxBodyBytes = 256 << 10

// Deps are what the handlers need: Auth, Limiter, Idem, Log and Clock
// always; Payments, Lookup and Webhooks for the groups that serve them;
// Metrics and Tracer are optional.
type Deps struct {
	Auth     *tenant.Authenticator
	Limiter  *ratelimit.Limiter
	Idem     *idempotency.Service
	Payments PaymentsAPI
	Lookup   LookupAPI   // the lookups group only
	Webhooks WebhooksAPI // the webhooks group only
	Log      *slog.Logger
	Clock    clock.Clock
	Metrics  Metrics
	Tracer   Tracer // optional request tracing (X-Ray in Lambda)
}

// Route is one endpoint.
type Route struct {
	Method  string
	Pattern string // ServeMux path pattern, without the method
	Name    string // short name for logs and metrics
	Perm    tenant.Permission
	// Site resolves the {siteId} path value (and the merchant) before Handle.
	Site bool
	// Flow, when set, is required of the site (409 yp_3004 otherwise).
	Flow tenant.Flow
	// BodyOptional: the document's requestBody is not required, so a POST
	// with no body may come without a Content-Type (415 otherwise).
	BodyOptional bool
	Handle       func(ctx context.Context, c *Call) (any, error)
}

// Call is what a route handler gets: an authenticated caller and the raw
// body, and the domain's per-call value (its resolved merchant and site and
// the upstream idempotency key going in; whether the upstream was called
// and the record writes still running coming out).
type Call struct {
	Req           *http.Request
	Principal     tenant.Principal
	Body          []byte
	payments.Call // by value: one allocation per request for all
	// the rate limit's verdict and the idempotency claim, on their way
	limit verdict
	claim claim
}

// PathValue returns a path wildcard's value.
func (c *Call) PathValue(name string) string { return c.Req.PathValue(name) }

// NewHandler mounts the given routes on one ServeMux, with JSON 404/405s.
func NewHandler(d *Deps, routes ...[]Route) http.Handler {
	byPattern := map[string][]Route{}
	var order []string
	for _, group := range routes {
		for _, rt := range group {
			if _, ok := byPattern[rt.Pattern]; !ok {
				order = append(order, rt.Pattern)
			}
			byPattern[rt.Pattern] = append(byPattern[rt.Pattern], rt)
		}
	}
	handlers := make(map[string]http.Handler, len(order))
	for _, p := range order {
		handlers[p] = d.pattern(byPattern[p])
	}
	mux := newRouteMux(order, handlers)
	unknown := d.wrap("unknown", func(w http.ResponseWriter, r *http.Request, info *reqInfo) {
		writeError(w, info, apperr.New(apperr.NotFound, "no such endpoint: "+r.Method+" "+r.URL.Path))
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// ServeMux answers a path it would clean ("//", "/./", "/../") with a
		// redirect that has no JSON body and no X-Request-Id; no route of the
		// API has such a path, so it is an unknown endpoint.
		if !cleanPath(r.URL.Path) {
			unknown.ServeHTTP(w, r)
			return
		}
		if h := mux.handler(r); h != nil {
			h.ServeHTTP(w, r)
			return
		}
		unknown.ServeHTTP(w, r)
	})
}

// cleanPath reports whether p is absolute and has no empty, "." or ".."
// segment (a trailing slash aside).
func cleanPath(p string) bool {
	if p == "" || p[0] != '/' {
		return false
	}
	for seg := range strings.SplitSeq(p[1:], "/") {
		if seg == "." || seg == ".." {
			return false
		}
	}
	return !strings.Contains(p, "//")
}

// pattern serves every route sharing one path, choosing by method.
func (d *Deps) pattern(routes []Route) http.Handler {
	var allow []string
	for _, rt := range routes {
		allow = append(allow, rt.Method)
	}
	allowHdr := strings.Join(allow, ", ")
	handlers := make(map[string]http.Handler, len(routes))
	for _, rt := range routes {
		handlers[rt.Method] = d.wrap(rt.Name, d.serve(rt))
	}
	notAllowed := d.wrap(routes[0].Name, func(w http.ResponseWriter, r *http.Request, info *reqInfo) {
		w.Header().Set("Allow", allowHdr)
		writeError(w, info, apperr.Newf(apperr.MethodNotAllowed, "method %s not allowed; use %s", r.Method, allowHdr))
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h, ok := handlers[r.Method]; ok {
			h.ServeHTTP(w, r)
			return
		}
		notAllowed.ServeHTTP(w, r)
	})
}

// serve runs one route's pipeline: headers sent once → auth → permission →
// rate limit → site and merchant → body → idempotency → handler, and
// answers the first of these that fails. After auth the store calls run
// at once: the rate-limit hit, site and merchant resolution (when not
// cached) and, for an idempotent POST, the claim of its key (the body is
// read first: the claim fingerprints it) — one store round trip deep
// instead of three. Their verdicts still come in that order: a limited
// request gets its 429 whatever else failed, an unknown site its 404
// whatever the claim found, and a claim made for a request that does not
// run is released.
func (d *Deps) serve(rt Route) handler {
	return func(w http.ResponseWriter, r *http.Request, info *reqInfo) {
		ctx := r.Context()
		if err := singleHeaders(r.Header); err != nil {
			writeError(w, info, err)
			return
		}
		p, err := d.Auth.Authenticate(ctx, r.Header.Get("Authorization"))
		if err != nil {
			writeError(w, info, err)
			return
		}
		info.Merchant = p.MerchantID()
		info.KeyID = p.Key.ID
		if err := d.Auth.Authorize(p, rt.Perm); err != nil {
			writeError(w, info, err)
			return
		}
		idempotent := r.Method == http.MethodPost && len(r.Header.Values(idempotency.Header)) > 0
		c := &Call{Req: r, Principal: p}
		limit := &c.limit
		d.startLimit(ctx, limit, p)
		var bodyErr error
		if r.Method == http.MethodPost {
			c.Body, bodyErr = readBody(w, r, rt.BodyOptional)
		}
		var cl *claim
		if idempotent && bodyErr == nil {
			cl = &c.claim
			d.startClaim(ctx, cl, r, c)
		}
		if rt.Site {
			info.Site = r.PathValue("siteId")
			c.Site, c.Merchant, err = d.Auth.Site(ctx, p, r.PathValue("siteId"))
			if err == nil && rt.Flow != "" {
				err = tenant.RequireFlow(c.Site, rt.Flow)
			}
		} else {
			c.Merchant, err = d.Auth.Merchant(ctx, p)
		}
		if err == nil {
			err = bodyErr
		}
		if err != nil {
			cl.release(ctx, d)
			writeError(w, info, limit.or(err))
			return
		}
		if !idempotent {
			if err := limit.wait(); err != nil {
				writeError(w, info, err)
				return
			}
			resp := d.run(ctx, rt, c)
			_ = c.Wait() // a lost record write is logged and counted where it was made
			info.PSPReference = resp.psp
			resp.write(w, info)
			return
		}
		d.serveIdempotent(w, r, info, rt, c, limit, cl)
	}
}

// claim is an idempotency claim on its way: the key as parsed, then the
// claim's outcome, set by its goroutine before it marks done.
type claim struct {
	key    string
	keyErr error // a malformed key: nothing was claimed
	fp     string
	done   sync.WaitGroup
	lease  *idempotency.Lease
	replay *idempotency.Response
	err    error
}

// startClaim starts claiming the Idempotency-Key of r for c's body.
func (d *Deps) startClaim(ctx context.Context, cl *claim, r *http.Request, c *Call) {
	cl.key, cl.keyErr = idempotency.ParseKey(r.Header.Get(idempotency.Header)) // sent once: singleHeaders
	if cl.keyErr != nil {
		return
	}
	cl.fp = idempotency.Fingerprint(r.Method, r.URL.Path, c.Body)
	cl.done.Add(1)
	go d.claimInto(ctx, cl, c.Principal.MerchantID())
}

func (d *Deps) claimInto(ctx context.Context, cl *claim, scope string) {
	defer cl.done.Done()
	cl.lease, cl.replay, cl.err = d.Idem.Begin(ctx, scope, cl.key, cl.fp)
}

// release gives back the key claimed for a request that does not run
// (nil: none started).
func (cl *claim) release(ctx context.Context, d *Deps) {
	if cl == nil {
		return
	}
	cl.done.Wait()
	if cl.lease != nil {
		d.Idem.Finish(ctx, cl.lease, idempotency.Response{}, false)
	}
}

// verdict is a rate-limit decision still on its way: the hit's goroutine
// sets err, then marks done.
type verdict struct {
	done sync.WaitGroup
	err  error
}

// wait returns the decision (nil: allowed; also for a nil verdict, a limit
// already passed).
func (v *verdict) wait() error {
	if v == nil {
		return nil
	}
	v.done.Wait()
	return v.err
}

// or returns the rate limit's error if the request is limited, else err:
// a limited request gets its 429 whatever else went wrong.
func (v *verdict) or(err error) error {
	if lerr := v.wait(); lerr != nil {
		return lerr
	}
	return err
}

// startLimit starts the caller's rate-limit hit into v.
func (d *Deps) startLimit(ctx context.Context, v *verdict, p tenant.Principal) {
	v.done.Add(1)
	go d.allowInto(ctx, v, p.Key.ID, p.Key.RatePerSecond, p.Key.Burst)
}

func (d *Deps) allowInto(ctx context.Context, v *verdict, keyID string, rate, burst int) {
	v.err = d.Limiter.Allow(ctx, keyID, rate, burst)
	v.done.Done()
}

// serveIdempotent runs a POST under its Idempotency-Key, claimed by cl.
// limit is the rate limiter's verdict, possibly still on its way: it
// decides before the claim's outcome does.
func (d *Deps) serveIdempotent(w http.ResponseWriter, r *http.Request, info *reqInfo, rt Route, c *Call, limit *verdict, cl *claim) {
	ctx := r.Context()
	if cl.keyErr != nil {
		writeError(w, info, limit.or(cl.keyErr))
		return
	}
	cl.done.Wait()
	scope, key, fp := c.Principal.MerchantID(), cl.key, cl.fp
	lease, replay, err := cl.lease, cl.replay, cl.err
	if lerr := limit.wait(); lerr != nil {
		if lease != nil { // limited: the request never ran
			d.Idem.Finish(ctx, lease, idempotency.Response{}, false)
		}
		writeError(w, info, lerr)
		return
	}
	if err != nil {
		writeError(w, info, err)
		return
	}
	if replay != nil {
		writeReplay(w, info, replay)
		return
	}
	c.UpstreamKey = idempotency.UpstreamKey(scope, key, fp)
	finished := false
	defer func() {
		// A handler that panicked (recovered by wrap) releases the key, so
		// a retry runs again instead of waiting out the lease.
		if !finished {
			d.Idem.Finish(ctx, lease, idempotency.Response{}, false)
		}
	}()
	resp := d.run(ctx, rt, c)
	info.PSPReference = resp.psp
	// The result is stored for replay when idempotency.Keep says so, else
	// the key is released; that write runs alongside the handler's record
	// writes (one round trip deep, not two), and the response waits for both.
	d.Idem.Finish(ctx, lease, idempotency.Response{Status: resp.status, Body: resp.body, Header: storedHeader},
		idempotency.Keep(resp.status, c.UpstreamCalled()))
	finished = true
	_ = c.Wait() // a lost record write is logged and counted where it was made
	resp.write(w, info)
}

// writeReplay answers with a stored response.
func writeReplay(w http.ResponseWriter, info *reqInfo, replay *idempotency.Response) {
	info.Replayed = true
	for k, v := range replay.Header {
		w.Header().Set(k, v)
	}
	w.Header().Set(idempotency.HeaderReplayed, "true")
	if code := replayErrorCode(replay); code != "" {
		info.ErrorCode = code
	}
	writeRaw(w, replay.Status, replay.Body)
}

// storedHeader is the header of every stored response; shared, never
// modified (stores copy it, replays read it).
var storedHeader = map[string]string{"Content-Type": "application/json"}

// replayErrorCode extracts errorCode from a stored error body for the log.
func replayErrorCode(r *idempotency.Response) string {
	if r.Status < 400 {
		return ""
	}
	var b struct {
		ErrorCode string `json:"errorCode"`
	}
	_ = json.Unmarshal(r.Body, &b)
	return b.ErrorCode
}

// response is a rendered result, written once.
type response struct {
	status int
	body   []byte
	err    error // the error rendered, for the request log
	psp    string
}

func (resp response) write(w http.ResponseWriter, info *reqInfo) {
	if resp.err != nil { // writeError also records the error for the log
		writeError(w, info, resp.err)
		return
	}
	writeRaw(w, resp.status, resp.body)
}

// run calls the handler and renders its result. A panic is recovered in
// one place, wrap.
func (d *Deps) run(ctx context.Context, rt Route, c *Call) response {
	out, err := rt.Handle(ctx, c)
	if err != nil {
		return renderError(err)
	}
	var body []byte
	switch v := out.(type) {
	case json.RawMessage:
		body = v
	case []byte:
		body = v
	default:
		if body, err = json.Marshal(v); err != nil {
			return renderError(apperr.Wrap(apperr.Internal, "internal error", fmt.Errorf("encode response: %w", err)))
		}
	}
	return response{status: http.StatusOK, body: body, psp: pspOf(out)}
}

// pspOf lets handlers report the pspReference for the request log.
func pspOf(v any) string {
	if p, ok := v.(interface{ PSP() string }); ok {
		return p.PSP()
	}
	return ""
}

// renderError renders err to the bytes WriteError would send, so stored
// idempotent results replay exactly.
func renderError(err error) response {
	e := apperr.As(err)
	spec := specFor(e.Kind)
	msg := e.Message
	if e.Kind == apperr.Internal {
		msg = "internal error; retry with the same Idempotency-Key"
	}
	body, _ := json.Marshal(errorBody{ErrorCode: spec.Code, Message: msg, Fields: e.Fields})
	return response{status: spec.Status, body: body, err: err}
}

// readAll is io.ReadAll starting with room for the declared length (when
// within MaxBodyBytes), so a body is read into one allocation instead of a
// growing series.
func readAll(r io.Reader, declared int64) ([]byte, error) {
	if declared <= 0 || declared > MaxBodyBytes {
		return io.ReadAll(r)
	}
	b := make([]byte, 0, declared+1) // +1: room to see EOF without growing
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}

// readBody checks Content-Type and reads at most MaxBodyBytes. A body the
// route takes as optional may be left out altogether: no body and no
// Content-Type.
func readBody(w http.ResponseWriter, r *http.Request, optional bool) ([]byte, error) {
	ct := r.Header.Get("Content-Type")
	untyped := optional && ct == ""
	// The usual value exactly needs no parsing (ParseMediaType allocates).
	if ct != "application/json" && !untyped {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return nil, notJSON()
		}
	}
	b, err := readAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes), r.ContentLength)
	if err != nil {
		return nil, readError(err)
	}
	if untyped && len(b) > 0 {
		return nil, notJSON()
	}
	return b, nil
}

func notJSON() error {
	return apperr.New(apperr.UnsupportedMediaType, "Content-Type must be application/json")
}

// readError is the answer to a body that could not be read.
func readError(err error) error {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return apperr.Newf(apperr.TooLarge, "request body larger than %d bytes", MaxBodyBytes)
	}
	return apperr.Wrap(apperr.Invalid, "could not read the request body", err)
}
