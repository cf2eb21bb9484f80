package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/testenv"
	"github.com/yp/paysvc/shared/upstream/simulator"
)

// captured makes a payment of merchant A, captured in full.
func (f *flow) captured(value int) string {
	f.t.Helper()
	psp := f.pay(cardBody("4111111111111111", "737", "Jo Doe", value))["pspReference"].(string)
	f.post("/payments/"+psp+"/captures", amountBody(value), 200)
	return psp
}

func TestFlowPartialRefunds(t *testing.T) {
	f := newFlow(t)
	psp := f.captured(1000)
	r1 := f.post("/payments/"+psp+"/refunds", `{"amount":{"value":300,"currency":"EUR"},"reference":"rma-1","lineItems":[{"id":"sku-1","description":"Shoe","quantity":1,"amountIncludingTax":300}]}`, 200)
	if r1["status"] != "received" || r1["paymentPspReference"] != psp || r1["pspReference"] == psp || r1["pspReference"] == "" {
		t.Fatalf("refund %v", r1)
	}
	up := f.e.Upstream.Last(t, "/refunds")
	if up["merchantAccount"] != "AlphaECOM" || up["reference"] != "rma-1" || len(up["lineItems"].([]any)) != 1 || len(up["splits"].([]any)) != 2 {
		t.Fatalf("upstream refund %v", up)
	}
	if _, v := f.record(psp); v.RefundsInFlight != 300 || v.Refunded != 0 || v.State != payments.StateCaptured {
		t.Fatalf("after refund %+v", v)
	}
	// Over what is left (1000 − 300 in flight), or another currency: 400
	// naming the field, before the upstream.
	before := len(f.e.Upstream.Requests("/refunds"))
	bad := f.post("/payments/"+psp+"/refunds", amountBody(701), 400)
	if bad["errorCode"] != "yp_2002" || !strings.Contains(string(mustJSON(t, bad["fields"])), "amount.value") {
		t.Fatalf("over-refund %v", bad)
	}
	f.post("/payments/"+psp+"/refunds", `{"amount":{"value":1,"currency":"USD"}}`, 400)
	f.post("/payments/"+psp+"/refunds", `{"amount":{"value":1,"currency":"EUR"},"merchantAccount":"X"}`, 400)
	f.post("/payments/"+psp+"/refunds", `{"reference":"no amount"}`, 400)
	if n := len(f.e.Upstream.Requests("/refunds")); n != before {
		t.Fatalf("refused refunds reached the upstream (%d calls)", n-before)
	}
	f.post("/payments/"+psp+"/refunds", amountBody(700), 200)
	if s := f.simState(psp); s.RefundedValue != 1000 || s.State != simulator.StateRefunded {
		t.Fatalf("simulator %+v", s)
	}
	f.post("/payments/"+psp+"/refunds", amountBody(1), 400)

	// An authorised, not captured payment cannot be refunded.
	open := f.pay(cardBody("4111111111111111", "737", "Jo", 500))["pspReference"].(string)
	f.post("/payments/"+open+"/refunds", amountBody(100), 400)
}

func TestFlowRefundUpstreamFailure(t *testing.T) {
	f := newFlow(t)
	psp := f.captured(1000)
	if err := f.e.Sim.FailNext("refunds", simulator.FailHTTP500); err != nil {
		t.Fatal(err)
	}
	r := f.e.Do("POST", "/v1/ecom/"+f.site+"/payments/"+psp+"/refunds", f.key, amountBody(1000), "Idempotency-Key", "rf-1")
	if r.Status != 500 || r.JSON(t)["errorCode"] != "yp_4010" {
		t.Fatalf("refund with the upstream failing: %d %s", r.Status, r.Body)
	}
	// No definitive answer: the platform may have refunded, so the refund
	// stays in flight (payments.Unknown) until the same call is answered.
	if p, v := f.record(psp); v.RefundsInFlight != 1000 || v.Refundable != 0 {
		t.Fatalf("after a 500: %+v, want the refund in flight", p.Totals)
	}
	// The same key again runs the refund (a 500 is not stored), as the same
	// operation, and then replays its answer.
	r = f.e.Do("POST", "/v1/ecom/"+f.site+"/payments/"+psp+"/refunds", f.key, amountBody(1000), "Idempotency-Key", "rf-1")
	if r.Status != 200 {
		t.Fatalf("retry: %d %s", r.Status, r.Body)
	}
	again := f.e.Do("POST", "/v1/ecom/"+f.site+"/payments/"+psp+"/refunds", f.key, amountBody(1000), "Idempotency-Key", "rf-1")
	if again.Status != 200 || string(again.Body) != string(r.Body) || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay: %d %s", again.Status, again.Body)
	}
	if _, v := f.record(psp); v.RefundsInFlight != 1000 {
		t.Fatalf("in flight %d, want 1000 once", v.RefundsInFlight)
	}
	// The retry's answer is recorded: the refund is known by its own
	// pspReference, so its REFUND notification finds it.
	var answer struct{ PSPReference string }
	if err := json.Unmarshal(r.Body, &answer); err != nil {
		t.Fatal(err)
	}
	if facts := f.e.Timeline(psp); !hasAPIFact(facts, "refund", answer.PSPReference) {
		t.Fatalf("the retry's answer (%s) is not recorded: timeline %+v", answer.PSPReference, facts)
	}
}

func TestFlowRefundOfAnotherMerchantOrSite(t *testing.T) {
	f := newFlow(t)
	psp := f.captured(1000)
	other := &flow{t: t, e: f.e, site: testenv.SiteB, key: "B"}
	if r := other.post("/payments/"+psp+"/refunds", amountBody(100), 404); r["errorCode"] != "yp_3006" {
		t.Fatalf("merchant B: %v", r)
	}
	sameMerchant := &flow{t: t, e: f.e, site: testenv.SiteAAdvanced, key: "A"}
	if r := sameMerchant.post("/payments/"+psp+"/refunds", amountBody(100), 404); r["errorCode"] != "yp_3006" {
		t.Fatalf("another site: %v", r)
	}
	unknown := f.post("/payments/NOPE000000000000/refunds", amountBody(100), 404)
	if unknown["errorCode"] != "yp_3006" {
		t.Fatalf("unknown: %v", unknown)
	}
	noPerm := &flow{t: t, e: f.e, site: testenv.SiteA, key: "AConfigOnly"}
	if r := noPerm.post("/payments/"+psp+"/refunds", amountBody(100), 403); r["errorCode"] != "yp_1002" {
		t.Fatalf("without the refunds permission: %v", r)
	}
	if p, v := f.record(psp); v.RefundsInFlight != 0 || len(f.e.Upstream.Requests("/refunds")) != 0 {
		t.Fatalf("a refused refund changed something: %+v", p)
	}
}

// Many parallel refunds of one payment, on both stores: never a 5xx, never
// more than captured, every refund that fits accepted, and the record's
// refunds in flight equal to what the upstream refunded.
func TestParallelRefundsOfOnePayment(t *testing.T) {
	onBothStores(t, func(t *testing.T, dyn bool) {
		e := testenv.NewWith(t, testenv.Options{Dynamo: dyn})
		psp := authorise(t, e, 1000)
		if r := e.Do("POST", "/v1/ecom/"+testenv.SiteA+"/payments/"+psp+"/captures", "A", amountBody(1000)); r.Status != 200 {
			t.Fatalf("capture %d %s", r.Status, r.Body)
		}
		statuses := parallel(t, e, 50, func(i int) (string, string) {
			return "/refunds", fmt.Sprintf(`{"amount":{"value":34,"currency":"EUR"},"reference":"rf-%d"}`, i)
		}, psp)
		// 29 × 34 ≤ 1000. A 409 yp_2005 (nothing sent upstream) is the
		// documented answer when a reservation keeps losing for about 5 s,
		// which only a starved machine shows; it may cost one refund that fit.
		ok, busy := statuses[200], statuses[409]
		if ok+busy < 29 || ok > 29 || statuses[200]+statuses[400]+busy != 50 || busy > 2 {
			t.Fatalf("statuses %v, want 29 × 200 (29 × 34 ≤ 1000) and the rest 400 (a rare 409 yp_2005 allowed)", statuses)
		}
		rec := record(t, e, psp)
		sim, _ := e.Sim.Payment(psp)
		want := int64(ok) * 34
		// Each refund written is one request and one answer in the
		// timeline: its operation's entry (op_…) moved to the refund's
		// own pspReference, accepted there.
		var ops, mods, all []string
		for _, f := range e.Timeline(psp) {
			switch f.Kind {
			case "refund-requested":
				ops = append(ops, f.PSPReference)
			case "refund":
				mods = append(mods, f.PSPReference)
			case "capture-requested", "capture":
				all = append(all, f.PSPReference)
			}
		}
		if v := rec.View(); v.RefundsInFlight != want || sim.RefundedValue != want || len(ops) != ok || len(mods) != ok {
			t.Fatalf("record in flight %d (%d requested, %d answered), upstream refunded %d; want %d", v.RefundsInFlight, len(ops), len(mods), sim.RefundedValue, want)
		}
		entries, err := e.Store.GetEntries(context.Background(), psp, append(ops, mods...)...)
		if err != nil {
			t.Fatal(err)
		}
		for _, en := range entries {
			accepted := en.Answered != nil && en.Answered.Outcome == payments.Received && en.Ref == en.Modification
			if strings.HasPrefix(en.Ref, "op_") && en.MergedInto == "" || !strings.HasPrefix(en.Ref, "op_") && !accepted {
				t.Fatalf("a refund of an accepted call was not settled: %+v", en)
			}
		}
		captures, err := e.Store.GetEntries(context.Background(), psp, all...)
		if err != nil {
			t.Fatal(err)
		}
		if got := payments.Fold(rec, append(entries, captures...)); len(entries) != 2*ok || got != rec.Totals {
			t.Fatalf("%d refund entries; Totals %+v, fold of the entries %+v", len(entries), rec.Totals, got)
		}
	})
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
