package httpapi

import (
	"net/http"
	"slices"
	"strings"
)

// routeMux serves path patterns that one http.ServeMux refuses to hold
// together: "/v1/ecom/{siteId}/payments/{pspReference}" and
// "/v1/ecom/webhook-deliveries/{deliveryId}/retry" both match
// "/v1/ecom/webhook-deliveries/payments/retry", and neither is more
// specific in ServeMux's sense. API Gateway resolves such paths level by
// level, a literal segment before a {variable}; routeMux does the same:
// patterns are ordered by that precedence and each goes into the first
// ServeMux it does not conflict with, and a request is served by the first
// ServeMux with a matching pattern.
type routeMux struct{ muxes []*http.ServeMux }

// newRouteMux mounts handlers by path pattern.
func newRouteMux(patterns []string, handlers map[string]http.Handler) *routeMux {
	ordered := slices.Clone(patterns)
	slices.SortStableFunc(ordered, precedence)
	m := &routeMux{}
	for _, p := range ordered {
		m.handle(p, handlers[p])
	}
	return m
}

func (m *routeMux) handle(pattern string, h http.Handler) {
	for _, mux := range m.muxes {
		if tryHandle(mux, pattern, h) {
			return
		}
	}
	mux := http.NewServeMux()
	mux.Handle(pattern, h) // panics only for a pattern no ServeMux takes
	m.muxes = append(m.muxes, mux)
}

// tryHandle registers pattern on mux unless it conflicts with one there
// (ServeMux panics before changing anything).
func tryHandle(mux *http.ServeMux, pattern string, h http.Handler) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	mux.Handle(pattern, h)
	return true
}

// handler returns the ServeMux holding the first matching pattern (which
// serves the request with its path values set), or nil.
func (m *routeMux) handler(r *http.Request) http.Handler {
	for _, mux := range m.muxes {
		if _, pattern := mux.Handler(r); pattern != "" {
			return mux
		}
	}
	return nil
}

// precedence orders patterns as API Gateway matches paths: at the first
// segment where they differ in kind, a literal comes before a {variable}.
func precedence(a, b string) int {
	as, bs := strings.Split(a, "/"), strings.Split(b, "/")
	for i := range min(len(as), len(bs)) {
		av, bv := strings.HasPrefix(as[i], "{"), strings.HasPrefix(bs[i], "{")
		switch {
		case av == bv:
			continue
		case bv:
			return -1
		default:
			return 1
		}
	}
	return 0
}
