package testenv_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/yp/paysvc/shared/testenv"
)

// TestRecorderFaults: each injected fault of a capture's upstream call —
// an error status, a dropped connection, a timeout, each with the upstream
// acting first or not — leaves the capture unanswered (a 5xx to the
// merchant, its amount in flight), the upstream's capture made exactly when
// the fault forwards the call, and After called exactly then.
func TestRecorderFaults(t *testing.T) {
	cases := []struct {
		name  string
		fault testenv.Fault
	}{
		{"status 500", testenv.Fault{Status: 500}},
		{"status 500 after the upstream acted", testenv.Fault{Status: 500, Forward: true}},
		{"dropped", testenv.Fault{Drop: true}},
		{"dropped after the upstream acted", testenv.Fault{Drop: true, Forward: true}},
		{"timed out", testenv.Fault{Timeout: true}},
		{"timed out after the upstream acted", testenv.Fault{Timeout: true, Forward: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := testenv.New(t)
			psp := pay(t, e)
			var after atomic.Int32 // called on the server's goroutine
			f := tc.fault
			f.After = func() { after.Add(1) }
			e.Upstream.InjectRequest(func(req testenv.Recorded) testenv.Fault {
				if strings.HasSuffix(req.Path, "/captures") {
					return f
				}
				return testenv.Fault{}
			})
			r := capture(e, psp)
			if r.Status < 500 {
				t.Fatalf("capture answered %d %s; want a 5xx", r.Status, r.Body)
			}
			sim, _ := e.Sim.Payment(psp)
			want, wantAfter := int64(0), int32(0)
			if tc.fault.Forward {
				want, wantAfter = 300, 1
			}
			if sim.CapturedValue != want || after.Load() != wantAfter {
				t.Fatalf("the upstream captured %d, After called %d times; want %d and %d", sim.CapturedValue, after.Load(), want, wantAfter)
			}
			h, err := e.Store.GetPayment(context.Background(), psp)
			if err != nil {
				t.Fatal(err)
			}
			if h.Totals.CapturesInFlight != 300 || h.Totals.Captured != 0 {
				t.Fatalf("totals %+v; want 300 in flight, nothing captured", h.Totals)
			}
		})
	}
}

// TestRecorderAfterWithoutFault: After alone lets the answer through,
// once the upstream has acted.
func TestRecorderAfterWithoutFault(t *testing.T) {
	e := testenv.New(t)
	psp := pay(t, e)
	var seen atomic.Int64
	seen.Store(-1)
	e.Upstream.InjectRequest(func(req testenv.Recorded) testenv.Fault {
		if !strings.HasSuffix(req.Path, "/captures") {
			return testenv.Fault{}
		}
		return testenv.Fault{After: func() { s, _ := e.Sim.Payment(psp); seen.Store(s.CapturedValue) }}
	})
	if r := capture(e, psp); r.Status != 200 || seen.Load() != 300 {
		t.Fatalf("capture answered %d %s, the upstream had captured %d when After ran; want 200 and 300", r.Status, r.Body, seen.Load())
	}
}

// capture captures 300 of payment psp.
func capture(e *testenv.Env, psp string) testenv.Response {
	return e.Do("POST", "/v1/ecom/"+testenv.SiteA+"/payments/"+psp+"/captures", "A",
		`{"amount":{"value":300,"currency":"EUR"},"reference":"c1"}`, "Idempotency-Key", "c1")
}

// pay makes an authorised card payment of 1000 EUR (merchant A: captured
// manually) and returns its pspReference.
func pay(t *testing.T, e *testenv.Env) string {
	t.Helper()
	body := `{"amount":{"value":1000,"currency":"EUR"},"reference":"order-1","returnUrl":"https://shop.example/r",
	"paymentMethod":{"type":"scheme","encryptedCardNumber":"test_4111111111111111","encryptedExpiryMonth":"test_03","encryptedExpiryYear":"test_2030","encryptedSecurityCode":"test_737"}}`
	r := e.Do("POST", "/v1/ecom/"+testenv.SiteA+"/payments", "A", body, "Idempotency-Key", "pay-1")
	var out struct{ PSPReference, ResultCode string }
	if err := json.Unmarshal(r.Body, &out); err != nil || r.Status != 200 || out.ResultCode != "Authorised" {
		t.Fatalf("payment: %d %s", r.Status, r.Body)
	}
	return out.PSPReference
}

// TestRestart: after Restart the service answers from what the store
// kept — the payment, its capture and the capture's Idempotency-Key — on
// both stores alike, and takes further operations.
func TestRestart(t *testing.T) {
	for _, dyn := range []bool{false, true} {
		t.Run(map[bool]string{false: "embedded", true: "dynamo"}[dyn], func(t *testing.T) {
			e := testenv.NewWith(t, testenv.Options{Dynamo: dyn})
			psp := pay(t, e)
			first := capture(e, psp)
			if first.Status != 200 {
				t.Fatalf("capture: %d %s", first.Status, first.Body)
			}
			before := e.Store
			e.Restart()
			if (e.Store != before) == dyn {
				t.Fatalf("store replaced: %v; want a new store on the embedded store only", e.Store != before)
			}
			if again := capture(e, psp); again.Status != 200 || string(again.Body) != string(first.Body) ||
				again.Header.Get("Idempotent-Replayed") != "true" {
				t.Fatalf("the capture again after the restart: %d %s (replayed %q); want the first answer replayed, %s",
					again.Status, again.Body, again.Header.Get("Idempotent-Replayed"), first.Body)
			}
			r := e.Do("POST", "/v1/ecom/"+testenv.SiteA+"/payments/"+psp+"/captures", "A",
				`{"amount":{"value":200,"currency":"EUR"},"reference":"c2"}`, "Idempotency-Key", "c2")
			if r.Status != 200 {
				t.Fatalf("a capture after the restart: %d %s", r.Status, r.Body)
			}
			h, err := e.Store.GetPayment(context.Background(), psp)
			if err != nil {
				t.Fatal(err)
			}
			if h.Totals.Captured != 500 || h.Totals.CapturesInFlight != 0 {
				t.Fatalf("totals %+v; want 500 captured", h.Totals)
			}
		})
	}
}
