package simulator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/yp/paysvc/shared/money"
)

// Test hooks, outside the upstream's API (README.md):
//
//	POST /_sim/sessions/{id}/pay            pay a session (body: SessionPayment)   X-API-Key
//	GET  /_sim/sessions/{id}/hosted         hosted-checkout page (mode "hosted")   browser
//	GET  /_sim/redirect/{actionId}          issuer / 3DS page of an action         browser
//	GET  /_sim/payments/{psp}               payment state                          X-API-Key
//	POST /_sim/payments/{psp}/resolve       ?result=authorised|refused             X-API-Key
//	POST /_sim/payments/{psp}/events        a platform event (body: PlatformEvent) X-API-Key
//	POST /_sim/offers/expire                close offers older than OfferTTL       X-API-Key
//	GET  /_sim/notifications                emitted notification items             X-API-Key
//	POST /_sim/flush                        wait for queued notifications          X-API-Key
//	POST /_sim/fail                         ?endpoint=…&failure=500|timeout        X-API-Key
func (s *Simulator) hookRoutes() {
	s.mux.Handle("POST /_sim/sessions/{id}/pay", s.hook(s.hookPaySession))
	s.mux.HandleFunc("GET /_sim/sessions/{id}/hosted", s.hookHosted)
	s.mux.HandleFunc("GET /_sim/redirect/{id}", s.hookRedirect)
	s.mux.Handle("GET /_sim/payments/{psp}", s.hook(s.hookPayment))
	s.mux.Handle("POST /_sim/payments/{psp}/resolve", s.hook(s.hookResolve))
	s.mux.Handle("POST /_sim/payments/{psp}/events", s.hook(s.hookPlatformEvent))
	s.mux.Handle("POST /_sim/offers/expire", s.hook(func(*http.Request) result {
		return jsonResult(http.StatusOK, map[string]any{"closed": s.ExpireOffers()})
	}))
	s.mux.Handle("POST /_sim/fail", s.hook(func(r *http.Request) result {
		q := r.URL.Query()
		if err := s.FailNext(q.Get("endpoint"), Failure(q.Get("failure"))); err != nil {
			return hookError(http.StatusBadRequest, err)
		}
		return jsonResult(http.StatusOK, map[string]string{"endpoint": q.Get("endpoint"), "failure": q.Get("failure")})
	}))
	s.mux.Handle("GET /_sim/notifications", s.hook(func(*http.Request) result {
		return jsonResult(http.StatusOK, map[string]any{"notifications": s.Notifications(), "stats": s.NotificationStats()})
	}))
	s.mux.Handle("POST /_sim/flush", s.hook(func(r *http.Request) result {
		ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
		defer cancel()
		if err := s.Flush(ctx); err != nil {
			return hookError(http.StatusGatewayTimeout, err)
		}
		return jsonResult(http.StatusOK, s.NotificationStats())
	}))
	s.mux.HandleFunc("/_sim/", func(w http.ResponseWriter, r *http.Request) {
		writeResult(w, hookError(http.StatusNotFound, fmt.Errorf("simulator: no test hook %s %s (see the simulator's README)", r.Method, r.URL.Path)))
	})
}

// ShopperPage reports whether path is one of the shopper pages (the
// hosted checkout, issuer and 3-D Secure pages): navigations from a shop,
// where every other /_sim/ path is a test hook.
func ShopperPage(path string) bool {
	rest, session := strings.CutPrefix(path, "/_sim/sessions/")
	return strings.HasPrefix(path, "/_sim/redirect/") || session && strings.HasSuffix(rest, "/hosted")
}

// hook wraps an authenticated test hook. It refuses what a web page can
// send (fromWebPage), so no page open in a browser uses the hooks.
func (s *Simulator) hook(h func(*http.Request) result) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := fromWebPage(r); err != nil {
			writeResult(w, hookError(http.StatusForbidden, err))
			return
		}
		if !s.authorised(r.Header.Get("X-API-Key")) {
			writeResult(w, hookError(http.StatusUnauthorized, errHookKey))
			return
		}
		writeResult(w, h(r))
		if r.Method != http.MethodGet {
			s.persist()
		}
	})
}

// fromWebPage says why r looks sent by a web page, or nil: an Origin
// other than the hook's own, a Sec-Fetch-Site other than same-origin or
// none, or a content type a form (or a fetch without a CORS preflight)
// can send. curl and Go clients send none of them; a JSON body goes with
// Content-Type: application/json.
func fromWebPage(r *http.Request) error {
	if o := r.Header.Get("Origin"); o != "" {
		if u, err := url.Parse(o); err != nil || !strings.EqualFold(u.Host, r.Host) {
			return fmt.Errorf("simulator: test hooks refuse requests from another origin (%s)", o)
		}
	}
	switch site := r.Header.Get("Sec-Fetch-Site"); site {
	case "", "same-origin", "none":
	default:
		return fmt.Errorf("simulator: test hooks refuse requests from another site (Sec-Fetch-Site: %s)", site)
	}
	switch mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt {
	case "application/x-www-form-urlencoded", "multipart/form-data", "text/plain":
		return fmt.Errorf("simulator: test hooks refuse %s bodies, which web forms send (send application/json)", mt)
	}
	return nil
}

func (s *Simulator) hookPaySession(r *http.Request) result {
	var sp SessionPayment
	if b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20)); len(b) > 0 {
		if err := json.Unmarshal(b, &sp); err != nil {
			return hookError(http.StatusBadRequest, err)
		}
	}
	res, err := s.PaySession(r.Context(), r.PathValue("id"), sp)
	if err != nil {
		return hookError(sessionErrorStatus(err), err)
	}
	return jsonResult(http.StatusOK, res)
}

func sessionErrorStatus(err error) int {
	var ae *apiError
	switch {
	case errors.Is(err, ErrSessionNotFound):
		return http.StatusNotFound
	case errors.Is(err, ErrSessionExpired):
		return http.StatusGone
	case errors.Is(err, ErrSessionCompleted), errors.Is(err, ErrPaymentMethodNotAvailable):
		return http.StatusConflict
	case errors.Is(err, ErrSimulatedFailure):
		return http.StatusBadGateway
	case errors.As(err, &ae):
		return ae.Status
	}
	return http.StatusInternalServerError
}

func (s *Simulator) hookPayment(r *http.Request) result {
	p, ok := s.Payment(r.PathValue("psp"))
	if !ok {
		return hookError(http.StatusNotFound, ErrPaymentNotFound)
	}
	return jsonResult(http.StatusOK, p)
}

// hookPlatformEvent plays a platform event (PlatformEvent; REPORT_AVAILABLE
// names no payment: {psp} is ignored) and answers the item emitted.
func (s *Simulator) hookPlatformEvent(r *http.Request) result {
	var ev PlatformEvent
	b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err := json.Unmarshal(b, &ev); err != nil || ev.Code == "" {
		return hookError(http.StatusBadRequest, errors.New(`body: {"code": "EXPIRE", "amount": 0, "of": "", "account": ""}`))
	}
	psp := r.PathValue("psp")
	if ev.Code == "REPORT_AVAILABLE" {
		psp = ""
	}
	it, err := s.PlatformEvent(psp, ev)
	if err != nil {
		return hookError(http.StatusConflict, err)
	}
	return jsonResult(http.StatusOK, it)
}

func (s *Simulator) hookResolve(r *http.Request) result {
	var authorised bool
	switch r.URL.Query().Get("result") {
	case "authorised", "":
		authorised = true
	case "refused":
	default:
		return hookError(http.StatusBadRequest, errors.New("result must be authorised or refused"))
	}
	psp := r.PathValue("psp")
	if err := s.ResolvePending(psp, authorised); err != nil {
		status := http.StatusConflict
		if errors.Is(err, ErrPaymentNotFound) {
			status = http.StatusNotFound
		}
		return hookError(status, err)
	}
	p, _ := s.Payment(psp)
	return jsonResult(http.StatusOK, p)
}

// hookRedirect is the simulated issuer page or 3-D Secure challenge of an
// action; it shows the amount, the reference and, for a challenge, the test
// password. With ?result=… it completes the step: a payment of the advanced
// flow returns the shopper to its returnUrl with a redirectResult for
// /payments/details; a payment started on the hosted checkout page is
// completed here and returns the shopper to the session's returnUrl with
// sessionId and sessionResult.
func (s *Simulator) hookRedirect(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s.mu.Lock()
	a := s.actions[id]
	var p *payment
	if a != nil {
		p = s.payments[a.PSP]
	}
	var amount money.Amount
	var reference, returnURL string
	hosted, challenge := false, false
	if p != nil {
		amount, reference, returnURL, hosted = p.Amount, p.Reference, p.ReturnURL, p.HostedSession
		challenge = s.threeDSStep(a)
	}
	s.mu.Unlock()
	if p == nil {
		pageError(w, r, http.StatusNotFound, errors.New("simulator: unknown payment action "+id))
		return
	}
	res := r.URL.Query().Get("result")
	if res == "" {
		what := fmt.Sprintf(`<p>Pay <strong id="amount">%s</strong> for reference <strong id="reference">%s</strong>.</p>`,
			html.EscapeString(FormatAmount(amount)), html.EscapeString(reference))
		if !challenge {
			page(w, http.StatusOK, "Simulated issuer", what+`<p class="hint">The payment method's page (simulated): choose the outcome.</p>
<form method="get"><button type="submit" id="authorise" name="result" value="authorised">Complete (authorise)</button>
<button type="submit" id="refuse" name="result" value="refused">Fail (refuse)</button></form>`)
			return
		}
		// A 3-D Secure challenge: the platform's test password is "password";
		// any other value fails the authentication.
		page(w, http.StatusOK, "Simulated 3-D Secure challenge", what+`<p class="hint" id="hint">Test password: <code>password</code> (any other value fails the authentication).</p>
<form method="get"><label for="password">One-time password</label> <input id="password" name="result" type="password" autocomplete="off">
<button type="submit" id="submit">Continue</button></form>`)
		return
	}
	if hosted {
		s.completeHosted(w, r, id, keywordSuccess(res))
		return
	}
	target, err := withQuery(returnURL, "redirectResult", encodeRedirectResult(id, keywordSuccess(res)))
	if err != nil {
		pageError(w, r, http.StatusBadRequest, errors.New("simulator: the payment's returnUrl is not a URL"))
		return
	}
	http.Redirect(w, r, target, http.StatusFound)
}

// completeHosted completes the challenge or redirect of a payment started
// on the hosted checkout page and returns the shopper to the session's
// returnUrl.
func (s *Simulator) completeHosted(w http.ResponseWriter, r *http.Request, actionID string, success bool) {
	s.mu.Lock()
	a := s.actions[actionID]
	p := s.payments[a.PSP]
	sess := s.sessions[p.SessionID]
	if a.Done || p.PendingActionID != a.ID || sess == nil {
		s.mu.Unlock()
		pageError(w, r, http.StatusConflict, errors.New("simulator: this payment step was already completed"))
		return
	}
	a.Done = true
	s.finishAction(p, a, success)
	res := s.sessionResult(sess, p)
	s.mu.Unlock()
	s.persist()
	s.returnFromSession(w, r, sess.Req.ReturnURL, sess.ID, res.SessionResult)
}

// hookHosted is the hosted checkout page of a "hosted" session. With
// ?holderName=…&cardNumber=… (or ?pay=1) it pays and returns the shopper to
// the session's returnUrl with sessionId and sessionResult; with
// Options.WebThreeDS2 a 3-D Secure or redirect card goes through its
// challenge or issuer page first, as on the platform.
func (s *Simulator) hookHosted(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	sess, ok := s.Session(id)
	if !ok {
		pageError(w, r, http.StatusNotFound, ErrSessionNotFound)
		return
	}
	q := r.URL.Query()
	if q.Get("pay") == "" && q.Get("holderName") == "" && q.Get("cardNumber") == "" {
		page(w, http.StatusOK, "Simulated hosted checkout", fmt.Sprintf(`<p>Pay <strong id="amount">%s</strong> for reference <strong id="reference">%s</strong> (session %s).</p>
<form method="get"><input type="hidden" name="pay" value="1">
<label for="cardNumber">Card number</label> <input id="cardNumber" name="cardNumber" value="4111111111111111" autocomplete="off">
<label for="holderName">Name on card</label> <input id="holderName" name="holderName" autocomplete="off">
<button type="submit" id="pay">Pay</button></form>
<p class="hint" id="hint">Test cards: 4111 1111 1111 1111 is authorised; 5454 5454 5454 5454 asks for 3-D Secure
(test password <code>password</code>); the name DECLINED refuses. Expiry 03/2030 and the card's CVC are filled in.</p>`,
			html.EscapeString(FormatAmount(sess.Amount)), html.EscapeString(sess.Reference), html.EscapeString(id)))
		return
	}
	res, actionID, err := s.paySession(r.Context(), id, SessionPayment{CardNumber: q.Get("cardNumber"), HolderName: q.Get("holderName")}, true)
	s.persist()
	if err != nil {
		pageError(w, r, sessionErrorStatus(err), err)
		return
	}
	if actionID != "" {
		http.Redirect(w, r, s.publicURL(r)+"/_sim/redirect/"+actionID, http.StatusFound)
		return
	}
	s.mu.Lock()
	returnURL := s.sessions[id].Req.ReturnURL
	s.mu.Unlock()
	s.returnFromSession(w, r, returnURL, id, res.SessionResult)
}

// returnFromSession sends the shopper back to a session's returnUrl with
// sessionId and sessionResult.
func (s *Simulator) returnFromSession(w http.ResponseWriter, r *http.Request, returnURL, id, result string) {
	target, err := withQuery(returnURL, "sessionId", id)
	if err == nil {
		target, err = withQuery(target, "sessionResult", result)
	}
	if err != nil {
		pageError(w, r, http.StatusBadRequest, errors.New("simulator: the session's returnUrl is not a URL"))
		return
	}
	http.Redirect(w, r, target, http.StatusFound)
}

// threeDSStep reports whether a is a 3-D Secure step (caller holds s.mu).
func (s *Simulator) threeDSStep(a *action) bool {
	if a.Kind != "redirect" {
		return a.Kind == "threeDS2" || a.Kind == "fingerprint"
	}
	p := s.payments[a.PSP]
	if p == nil || p.Card == nil || !s.opts.WebThreeDS2 {
		return false
	}
	tc, ok := lookupCard(p.Card.Number)
	return ok && (tc.Behaviour == Challenge || tc.Behaviour == Frictionless)
}

func withQuery(raw, key, value string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return "", errors.New("not an absolute URL")
	}
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// pageStyle keeps the shopper pages readable without any asset.
const pageStyle = `body{font:16px/1.5 system-ui,sans-serif;max-width:36em;margin:3em auto;padding:0 1em;color:#1b1b1b}
h1{font-size:1.4em}label{display:block;margin-top:.8em}input{font:inherit;padding:.3em;width:100%;box-sizing:border-box}
button{font:inherit;margin-top:1em;padding:.4em 1.2em}.hint{background:#f3f6fa;border-left:4px solid #4a7bd0;padding:.5em .8em}
.error{color:#a00}.sim{color:#666;font-size:.85em;margin-top:3em}`

// page writes a shopper page with status.
func page(w http.ResponseWriter, status int, title, body string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	title = html.EscapeString(title)
	_, _ = fmt.Fprintf(w, `<!doctype html><html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width"><title>%s</title><style>%s</style></head><body><h1>%s</h1>%s<p class="sim">Upstream simulator (test environment): no real payment is made.</p></body></html>`,
		title, pageStyle, title, body)
}
