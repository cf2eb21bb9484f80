package httpapi

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strconv"

	"github.com/yp/paysvc/shared/apperr"
)

// NotificationsPath is where the upstream posts its standard notifications.
// It is not under a merchant key: it is authenticated by every item's HMAC
// signature and, optionally, HTTP basic auth.
const NotificationsPath = "/v1/notifications/upstream"

// NotificationsAPI is the port to the inbound notification processing
// (connector.Inbox): Accept decodes and verifies a notification body and
// returns nil once every item is durably stored and its deliveries
// enqueued; an apperr.Unauthenticated error for a bad signature. psp is
// the pspReference of a one-item notification, for the request log.
type NotificationsAPI interface {
	Accept(ctx context.Context, body []byte) (psp string, err error)
}

// BasicAuth is the optional basic-auth credential the upstream sends with
// notifications; an empty Username turns the check off.
type BasicAuth struct {
	Username string
	Password string
}

// String hides the password.
func (BasicAuth) String() string { return "BasicAuth{redacted}" }

// acceptedBody is the answer the upstream expects to stop retrying.
const acceptedBody = "[accepted]"

// Notifications serves POST NotificationsPath with n, and every other path
// with next (the API's handler, or NewHandler(d) for JSON 404s).
func Notifications(d *Deps, n NotificationsAPI, auth BasicAuth, next http.Handler) http.Handler {
	notifications := d.wrap("notifications", func(w http.ResponseWriter, r *http.Request, info *reqInfo) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			writeError(w, info, apperr.Newf(apperr.MethodNotAllowed, "method %s not allowed; use POST", r.Method))
			return
		}
		if err := singleHeaders(r.Header); err != nil {
			writeError(w, info, err)
			return
		}
		if !auth.allows(r) {
			w.Header().Set("WWW-Authenticate", `Basic realm="notifications"`)
			writeError(w, info, apperr.New(apperr.Unauthenticated, "invalid notification credentials"))
			return
		}
		body, err := readBody(w, r, false)
		if err != nil {
			writeError(w, info, err)
			return
		}
		info.PSPReference, err = n.Accept(r.Context(), body)
		if err != nil {
			writeError(w, info, err)
			return
		}
		h := w.Header()
		h.Set("Content-Type", "text/plain; charset=utf-8")
		h.Set("Content-Length", strconv.Itoa(len(acceptedBody)))
		h.Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(acceptedBody))
	})
	// An exact match, not a ServeMux: a mux would answer unclean paths with
	// a redirect instead of next's JSON 404.
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == NotificationsPath {
			notifications.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// allows checks the request's basic auth in constant time (comparing
// digests, so neither the length nor the content leaks).
func (a BasicAuth) allows(r *http.Request) bool {
	if a.Username == "" {
		return true
	}
	user, pass, ok := r.BasicAuth()
	if !ok {
		return false
	}
	u1, u2 := sha256.Sum256([]byte(user)), sha256.Sum256([]byte(a.Username))
	p1, p2 := sha256.Sum256([]byte(pass)), sha256.Sum256([]byte(a.Password))
	return subtle.ConstantTimeCompare(u1[:], u2[:])&subtle.ConstantTimeCompare(p1[:], p2[:]) == 1
}
