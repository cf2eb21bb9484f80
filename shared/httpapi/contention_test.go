package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/testenv"
)

// Many parallel modifications of one payment: every request ends in success
// or a documented 4xx (never 5xx), captures never exceed the authorisation,
// every capture that fits is accepted (contention alone refuses none), and
// the record ends equal to what the upstream holds — no update after an
// accepted upstream call is dropped. On both stores.
func TestParallelModificationsOfOnePayment(t *testing.T) {
	onBothStores(t, func(t *testing.T, dyn bool) {
		t.Run("captures", func(t *testing.T) {
			e := testenv.NewWith(t, testenv.Options{Dynamo: dyn})
			psp := authorise(t, e, 1000)
			statuses := parallel(t, e, 50, func(i int) (string, string) {
				return "/captures", `{"amount":{"value":34,"currency":"EUR"},"reference":"cap-` + fmt.Sprint(i) + `"}`
			}, psp)
			if statuses[200] != 29 || statuses[400] != 21 || len(statuses) != 2 {
				t.Fatalf("statuses %v, want 29 × 200 (29 × 34 ≤ 1000) and 21 × 400", statuses)
			}
			rec := record(t, e, psp)
			v := rec.View()
			sim, _ := e.Sim.Payment(psp)
			if v.Captured != 29*34 || sim.CapturedValue != v.Captured || inFlight(rec) {
				t.Fatalf("record captured %d (totals %+v), upstream %d; want %d", v.Captured, rec.Totals, sim.CapturedValue, 29*34)
			}
		})
		t.Run("mixed", func(t *testing.T) {
			e := testenv.NewWith(t, testenv.Options{Dynamo: dyn})
			psp := authorise(t, e, 1000)
			var mu sync.Mutex
			accepted := map[string]int{}
			statuses := parallel(t, e, 50, func(i int) (string, string) {
				switch i % 10 {
				case 0:
					return "/reversals", `{"reference":"rev-` + fmt.Sprint(i) + `"}`
				case 1, 2:
					return "/amount-updates", `{"pspReference":"` + psp + `","amount":{"value":` + fmt.Sprint(1000+i) + `,"currency":"EUR"}}`
				}
				return "/captures", `{"amount":{"value":34,"currency":"EUR"}}`
			}, psp, func(suffix string, status int) {
				if status == 200 {
					mu.Lock()
					accepted[suffix]++
					mu.Unlock()
				}
			})
			for st := range statuses {
				if st >= 500 {
					t.Fatalf("statuses %v: a 5xx under contention", statuses)
				}
			}
			rec := record(t, e, psp)
			v := rec.View()
			sim, _ := e.Sim.Payment(psp)
			// The accepted captures are exactly what the upstream captured,
			// within what it authorised; the record holds the same amounts.
			captured := int64(34 * accepted["/captures"])
			if captured != sim.CapturedValue || captured > sim.AuthorisedValue {
				t.Fatalf("accepted captures sum to %d; upstream captured %d of %d (accepted %v)", captured, sim.CapturedValue, sim.AuthorisedValue, accepted)
			}
			// The record's amount is the payment's as adjusted by an
			// accepted amount update (the simulator keeps the requested one
			// and adjusts only what it authorised).
			wantAmount := sim.Amount
			if accepted["/amount-updates"] > 0 {
				wantAmount.Value = sim.AuthorisedValue
			}
			if inFlight(rec) || v.Captured != sim.CapturedValue || v.Authorised != sim.AuthorisedValue ||
				v.Refunded != sim.RefundedValue || v.Amount != wantAmount {
				t.Fatalf("record authorised %d captured %d refunded %d amount %v (totals %+v); upstream authorised %d captured %d refunded %d amount %v; accepted %v",
					v.Authorised, v.Captured, v.Refunded, v.Amount, rec.Totals,
					sim.AuthorisedValue, sim.CapturedValue, sim.RefundedValue, sim.Amount, accepted)
			}
			// Every accepted modification is in the payment's timeline (a
			// reversal is the platform's cancel, or a refund of what was
			// captured: never /reversals for a payment with splits).
			if n := len(e.Upstream.Requests("/reversals")); n != 0 {
				t.Fatalf("%d calls of the platform's /reversals", n)
			}
			kinds := map[string]int{}
			for _, f := range e.Timeline(psp) {
				kinds[f.Kind]++
			}
			if kinds["capture"] != accepted["/captures"] || kinds["cancel"]+kinds["refund"] != accepted["/reversals"] || kinds["amount-update"] != accepted["/amount-updates"] {
				t.Fatalf("timeline kinds %v, accepted %v", kinds, accepted)
			}
		})
	})
}

// authorise makes an authorised, manually captured pre-authorisation of
// value (so amount updates apply).
func authorise(t *testing.T, e *testenv.Env, value int) string {
	t.Helper()
	r := e.Do("POST", "/v1/ecom/"+testenv.SiteA+"/payments", "A",
		preAuth(strings.Replace(payBody(""), `"value":1000`, fmt.Sprintf(`"value":%d`, value), 1)))
	var out struct{ PSPReference, ResultCode string }
	if err := json.Unmarshal(r.Body, &out); err != nil || r.Status != 200 || out.ResultCode != "Authorised" {
		t.Fatalf("payment: %d %s", r.Status, r.Body)
	}
	return out.PSPReference
}

// parallel sends n modification requests at once, each with its own
// Idempotency-Key, and counts the answers by status.
func parallel(t *testing.T, e *testenv.Env, n int, req func(i int) (suffix, body string), psp string, seen ...func(suffix string, status int)) map[int]int {
	t.Helper()
	var mu sync.Mutex
	statuses := map[int]int{}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			suffix, body := req(i)
			r := e.Do("POST", "/v1/ecom/"+testenv.SiteA+"/payments/"+psp+suffix, "A", body,
				"Idempotency-Key", fmt.Sprintf("contention-%d", i))
			mu.Lock()
			statuses[r.Status]++
			mu.Unlock()
			for _, f := range seen {
				f(suffix, r.Status)
			}
			if r.Status >= 500 {
				t.Errorf("%s: %d %s", suffix, r.Status, r.Body)
			}
		}()
	}
	close(start)
	wg.Wait()
	return statuses
}

// record is payment psp's head.
func record(t *testing.T, e *testenv.Env, psp string) payments.Head {
	t.Helper()
	h, err := e.Store.GetPayment(context.Background(), psp)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// inFlight reports an operation of head h still in flight (requested,
// its answer not recorded).
func inFlight(h payments.Head) bool {
	t := h.Totals
	return t.CapturesInFlight != 0 || t.RefundsInFlight != 0 || t.ReversalsInFlight != 0 || t.AmountUpdatesInFlight != 0 || t.CancelsInFlight != 0
}
