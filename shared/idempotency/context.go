package idempotency

import (
	"context"
	"sync/atomic"
)

type ctxKey struct{}

// callState travels in a request's context: the upstream key to send and
// whether the upstream was called.
type callState struct {
	upstreamKey string
	called      atomic.Bool
}

// WithCall returns a context carrying the upstream key for this request
// (empty when the request has no Idempotency-Key).
func WithCall(ctx context.Context, upstreamKey string) context.Context {
	return context.WithValue(ctx, ctxKey{}, &callState{upstreamKey: upstreamKey})
}

// UpstreamKeyFrom returns the key to send upstream, or "".
func UpstreamKeyFrom(ctx context.Context) string {
	if c, ok := ctx.Value(ctxKey{}).(*callState); ok {
		return c.upstreamKey
	}
	return ""
}

// MarkUpstreamCalled records that the request reached the upstream. Call it
// just before sending: from then on the result is the upstream's.
func MarkUpstreamCalled(ctx context.Context) {
	if c, ok := ctx.Value(ctxKey{}).(*callState); ok {
		c.called.Store(true)
	}
}

// UpstreamCalled reports whether MarkUpstreamCalled ran for this request.
func UpstreamCalled(ctx context.Context) bool {
	if c, ok := ctx.Value(ctxKey{}).(*callState); ok {
		return c.called.Load()
	}
	return false
}
