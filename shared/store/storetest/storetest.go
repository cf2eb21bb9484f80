// Package storetest is the contract suite every storage adapter must pass.
//
// Each TestXxxStore function checks one port (tenant, idempotency, rate limit,
// payments) against fresh stores obtained from a factory; RunAll runs them
// all. An adapter's own test calls them with a factory that builds an empty
// store reading the time from the given clock:
//
//	func TestContract(t *testing.T) {
//		storetest.RunAll(t, func(t *testing.T, clk clock.Clock) storetest.Stores {
//			s := newEmptyStore(t, clk)
//			return storetest.Stores{Tenant: s, Idempotency: s, RateLimit: s, Payments: s}
//		})
//	}
//
// The suite never reads the wall clock: every time it asserts on is fixed or
// derived from the fake clock it hands to the factory.
package storetest

import (
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/idempotency"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/ratelimit"
	"github.com/yp/paysvc/shared/tenant"
)

// Factory returns a fresh, empty store of type T whose notion of "now" (for
// expiry checks that take no explicit time) comes from clk. It is called once
// per subtest; the factory registers any cleanup with t.
type Factory[T any] func(t *testing.T, clk clock.Clock) T

// Stores bundles the four ports one adapter implements.
type Stores struct {
	Tenant      tenant.Store
	Idempotency idempotency.Store
	RateLimit   ratelimit.Store
	Payments    payments.Store
}

// RunAll runs every port's contract against stores built by newStores.
func RunAll(t *testing.T, newStores Factory[Stores]) {
	t.Helper()
	t.Run("Tenant", func(t *testing.T) {
		TestTenantStore(t, func(t *testing.T, clk clock.Clock) tenant.Store { return newStores(t, clk).Tenant })
	})
	t.Run("Idempotency", func(t *testing.T) {
		TestIdempotencyStore(t, func(t *testing.T, clk clock.Clock) idempotency.Store { return newStores(t, clk).Idempotency })
	})
	t.Run("RateLimit", func(t *testing.T) {
		TestRateLimitStore(t, func(t *testing.T, clk clock.Clock) ratelimit.Store { return newStores(t, clk).RateLimit })
	})
	t.Run("Payments", func(t *testing.T) {
		TestPaymentStore(t, func(t *testing.T, clk clock.Clock) payments.Store { return newStores(t, clk).Payments })
	})
}

// testCase is one named check of a port's contract, run on a fresh store.
type testCase[S any] struct {
	name string
	run  func(t *testing.T, s S)
}

// runCases runs each case as a subtest on a store from newStore.
func runCases[S any](t *testing.T, newStore Factory[S], cases []testCase[S]) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, newStore(t, newClock())) })
	}
}

// epoch is the fixed instant every test starts from. It carries nanoseconds
// so that adapters which truncate time are caught.
func epoch() time.Time { return time.Date(2025, time.March, 14, 9, 26, 53, 589793238, time.UTC) }

// newClock returns a fake clock at epoch.
func newClock() *clock.Fake { return clock.NewFake(epoch()) }

// elsewhere is a non-UTC zone used to check that adapters store UTC.
func elsewhere() *time.Location { return time.FixedZone("UTC+05:30", 5*3600+30*60) }

// wantErr fails the test unless errors.Is(err, target).
func wantErr(t *testing.T, err, target error, what string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: got error %v, want %v", what, err, target)
	}
}

// noErr fails the test if err is not nil.
func noErr(t *testing.T, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: unexpected error: %v", what, err)
	}
}

// same fails the test unless got and want are deeply equal.
func same[T any](t *testing.T, got, want T, what string) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\n got: %+v\nwant: %+v", what, got, want)
	}
}

// eventually fails the test unless got returns want within 50 tries 10 ms
// apart (lists read from DynamoDB's indexes may lag a write briefly).
func eventually[T any](t *testing.T, want T, what string, got func() T) {
	t.Helper()
	var g T
	for range 50 {
		if g = got(); reflect.DeepEqual(g, want) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	same(t, g, want, what)
}

// sameTime fails the test unless got is the same instant as want and in UTC.
func sameTime(t *testing.T, got, want time.Time, what string) {
	t.Helper()
	if !got.Equal(want) {
		t.Fatalf("%s: got time %s, want %s", what, got.Format(time.RFC3339Nano), want.Format(time.RFC3339Nano))
	}
	if got.Location() != time.UTC {
		t.Fatalf("%s: got location %s, want UTC", what, got.Location())
	}
}

// ids returns the ID of every element, via id.
func ids[T any](xs []T, id func(T) string) []string {
	out := make([]string, 0, len(xs))
	for _, x := range xs {
		out = append(out, id(x))
	}
	return out
}

// runConcurrently runs fn(i) for i in [0, n) on n goroutines released at the
// same moment, and waits for all of them.
func runConcurrently(n int, fn func(i int)) {
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	ready.Add(n)
	done.Add(n)
	for i := range n {
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			fn(i)
		}()
	}
	ready.Wait()
	close(start)
	done.Wait()
}

// name builds a distinct identifier for test records.
func name(prefix string, i int) string { return fmt.Sprintf("%s_%02d", prefix, i) }
