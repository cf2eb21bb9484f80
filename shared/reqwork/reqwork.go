// Package reqwork lets a request's handler hand off work that must finish
// before the response is written but need not delay what comes after the
// handler (for example a payment record write running alongside the
// idempotency result write). It keeps store round trips off the critical
// path without ever answering before the work is done.
package reqwork

import (
	"context"
	"sync"
)

type ctxKey struct{}

// Group is the work of one request.
type Group struct{ wg sync.WaitGroup }

// With returns a context carrying a new Group.
func With(ctx context.Context) (context.Context, *Group) {
	g := &Group{}
	return context.WithValue(ctx, ctxKey{}, g), g
}

// Go runs fn concurrently when ctx carries a Group, and at once otherwise.
// fn gets a context that outlives the request's cancellation.
func Go(ctx context.Context, fn func(ctx context.Context)) {
	detached := context.WithoutCancel(ctx)
	g, ok := ctx.Value(ctxKey{}).(*Group)
	if !ok {
		fn(detached)
		return
	}
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		fn(detached)
	}()
}

// Wait blocks until every fn started with Go has returned.
func (g *Group) Wait() { g.wg.Wait() }
