package simulator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Test hooks, outside the upstream's API (README.md):
//
//	POST /_sim/sessions/{id}/pay            pay a session (body: SessionPayment)   X-API-Key
//	GET  /_sim/sessions/{id}/hosted         hosted-checkout page (mode "hosted")   browser
//	GET  /_sim/redirect/{actionId}          issuer / 3DS page of an action         browser
//	GET  /_sim/payments/{psp}               payment state                          X-API-Key
//	POST /_sim/payments/{psp}/resolve       ?result=authorised|refused             X-API-Key
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
	s.mux.Handle("POST /_sim/offers/expire", s.hook(func(*http.Request) result {
		return jsonResult(http.StatusOK, map[string]any{"closed": nonNil(s.ExpireOffers())})
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
}

func nonNil(xs []string) []string {
	if xs == nil {
		return []string{}
	}
	return xs
}

// hook wraps an authenticated test hook.
func (s *Simulator) hook(h func(*http.Request) result) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.authorised(r.Header.Get("X-API-Key")) {
			writeResult(w, errorResult(errUnauthorized()))
			return
		}
		writeResult(w, h(r))
	})
}

func hookError(status int, err error) result {
	return jsonResult(status, map[string]string{"error": err.Error()})
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

// hookRedirect is the simulated issuer page of a redirect or 3DS2 action.
// With ?result=authorised|refused it sends the shopper back to the payment's
// returnUrl with a redirectResult for /payments/details.
func (s *Simulator) hookRedirect(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s.mu.Lock()
	a := s.actions[id]
	var returnURL string
	if a != nil && s.payments[a.PSP] != nil {
		returnURL = s.payments[a.PSP].ReturnURL
	}
	s.mu.Unlock()
	if a == nil {
		http.Error(w, "unknown action", http.StatusNotFound)
		return
	}
	res := r.URL.Query().Get("result")
	if res == "" {
		if a.Kind == "redirect" && !s.threeDSRedirect(a) {
			page(w, "Simulated issuer", fmt.Sprintf(`<p>Payment action %s (%s).</p>
<form method="get"><button type="submit" id="authorise" name="result" value="authorised">Complete (authorise)</button>
<button type="submit" id="refuse" name="result" value="refused">Fail (refuse)</button></form>`,
				html.EscapeString(id), html.EscapeString(a.Kind)))
			return
		}
		// A 3-D Secure challenge: the platform's test password is "password";
		// any other value fails the authentication.
		page(w, "Simulated 3D Secure challenge", fmt.Sprintf(`<p>Payment action %s: enter the one-time password.</p>
<form method="get"><label for="password">Password</label> <input id="password" name="result" type="password" autocomplete="off">
<button type="submit" id="submit">Continue</button></form>`, html.EscapeString(id)))
		return
	}
	target, err := withQuery(returnURL, "redirectResult", encodeRedirectResult(id, keywordSuccess(res)))
	if err != nil {
		http.Error(w, "payment returnUrl is not a URL", http.StatusBadRequest)
		return
	}
	http.Redirect(w, r, target, http.StatusFound)
}

// hookHosted is the hosted checkout page of a "hosted" session. With
// ?holderName=…&cardNumber=… (or ?pay=1) it pays and returns the shopper to
// the session's returnUrl with sessionId and sessionResult.
func (s *Simulator) hookHosted(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	sess, ok := s.Session(id)
	if !ok {
		http.Error(w, "unknown session", http.StatusNotFound)
		return
	}
	q := r.URL.Query()
	if q.Get("pay") == "" && q.Get("holderName") == "" && q.Get("cardNumber") == "" {
		page(w, "Simulated hosted checkout", fmt.Sprintf(`<p>Session %s: %d %s, reference %s.</p>
<form method="get"><input type="hidden" name="pay" value="1">
<label for="cardNumber">Card number</label> <input id="cardNumber" name="cardNumber" value="4111111111111111" autocomplete="off">
<label for="holderName">Name on card</label> <input id="holderName" name="holderName" autocomplete="off">
<button type="submit" id="pay">Pay</button></form>`,
			html.EscapeString(id), sess.Amount.Value, html.EscapeString(sess.Amount.Currency), html.EscapeString(sess.Reference)))
		return
	}
	res, err := s.PaySession(r.Context(), id, SessionPayment{CardNumber: q.Get("cardNumber"), HolderName: q.Get("holderName")})
	if err != nil {
		http.Error(w, err.Error(), sessionErrorStatus(err))
		return
	}
	s.mu.Lock()
	returnURL := s.sessions[id].Req.ReturnURL
	s.mu.Unlock()
	target, err := withQuery(returnURL, "sessionId", id)
	if err == nil {
		target, err = withQuery(target, "sessionResult", res.SessionResult)
	}
	if err != nil {
		http.Error(w, "session returnUrl is not a URL", http.StatusBadRequest)
		return
	}
	http.Redirect(w, r, target, http.StatusFound)
}

// threeDSRedirect reports whether a redirect action is the 3-D Secure step
// of a card payment (Options.WebThreeDS2) rather than an issuer redirect.
func (s *Simulator) threeDSRedirect(a *action) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.threeDSStep(a)
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

func page(w http.ResponseWriter, title, body string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	var b strings.Builder
	b.WriteString("<!doctype html><html><head><meta charset=\"utf-8\"><title>")
	b.WriteString(html.EscapeString(title))
	b.WriteString("</title></head><body><h1>")
	b.WriteString(html.EscapeString(title))
	b.WriteString("</h1>")
	b.WriteString(body)
	b.WriteString("</body></html>")
	_, _ = io.WriteString(w, b.String())
}
