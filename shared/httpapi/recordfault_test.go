package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/testenv"
	"github.com/yp/paysvc/shared/testutil/storefault"
	"github.com/yp/paysvc/shared/upstream/simulator"
)

// What repairs each record write that follows the platform's answer when
// the store refuses it for the whole retry window (lost: logged and
// counted, docs/payments.md), over HTTP on both stores.

// faulty is an Env whose payments service writes through a store that can
// be taken down, and whose record writes are tried once; published: the
// simulator answers as the platform's published examples do.
func faulty(t *testing.T, dyn, published bool) (*testenv.Env, *storefault.Payments) {
	t.Helper()
	fw := &storefault.Payments{}
	e := testenv.NewWith(t, testenv.Options{Dynamo: dyn,
		WrapPayments: func(s payments.Store) payments.Store {
			fw.Store = s
			return fw
		},
		Simulator: func(o *simulator.Options) { o.PublishedShapes = published }})
	e.Payments.RetryRecordWritesFor(0)
	return e, fw
}

// downFrom POSTs body to path with key A, taking the store down as the
// platform gets the call to a path ending in suffix: what the request wrote
// before stays, nothing after is written. The store is back once it answered.
func downFrom(e *testenv.Env, fw *storefault.Payments, suffix, path, body string, headers ...string) testenv.Response {
	e.Upstream.Inject(func(p string) testenv.Fault {
		if strings.HasSuffix(p, suffix) {
			fw.Down.Store(true)
		}
		return testenv.Fault{}
	})
	defer func() {
		e.Upstream.Inject(nil)
		fw.Down.Store(false)
	}()
	return e.Do("POST", path, "A", body, headers...)
}

// wantLost checks the service logged a lost record write of kind.
func wantLost(t *testing.T, e *testenv.Env, kind string) {
	t.Helper()
	if logs := e.Logs.String(); !strings.Contains(logs, "record write after the upstream answered failed") ||
		!strings.Contains(logs, `"record":"`+kind+`"`) {
		t.Fatalf("no lost %s write logged:\n%s", kind, logs)
	}
}

// A pre-authorisation answered with its pspReference whose head write is
// lost answers 200 all the same; its AUTHORISATION notification creates
// the head from its routing metadata and the pending record written
// before the call: the same as a normal run's, and its amount can be
// updated.
func TestLostPaymentRecordRepairedByItsNotification(t *testing.T) {
	onBothStores(t, func(t *testing.T, dyn bool) {
		e, fw := faulty(t, dyn, false)
		normal := authorise(t, e, 1000)
		r := downFrom(e, fw, "/payments", "/v1/ecom/"+testenv.SiteA+"/payments", preAuth(payBody("")), "Idempotency-Key", "lost-payment")
		var out struct{ PSPReference, ResultCode string }
		if err := json.Unmarshal(r.Body, &out); err != nil || r.Status != 200 || out.ResultCode != "Authorised" {
			t.Fatalf("payment whose record is lost: %d %s", r.Status, r.Body)
		}
		wantLost(t, e, "payment")
		if g := e.Do("GET", "/v1/ecom/"+testenv.SiteA+"/payments/"+out.PSPReference, "A", ""); g.Status != 404 {
			t.Fatalf("lookup before the notification: %d %s", g.Status, g.Body)
		}
		e.Notify()
		got, want := record(t, e, out.PSPReference), record(t, e, normal)
		if got.View() != want.View() || got.AuthorisationType != payments.AuthorisationPreAuth || got.CaptureMode != want.CaptureMode ||
			got.Source != want.Source || got.SiteID != want.SiteID || got.Reference == "" {
			t.Fatalf("repaired %+v, a normal run's %+v", got, want)
		}
		up := e.Do("POST", "/v1/ecom/"+testenv.SiteA+"/payments/"+out.PSPReference+"/amount-updates", "A",
			fmt.Sprintf(`{"pspReference":%q,"amount":{"value":1200,"currency":"EUR"}}`, out.PSPReference))
		if up.Status != 200 {
			t.Fatalf("amount update of the repaired payment: %d %s", up.Status, up.Body)
		}
	})
}

// Details whose record write is lost answer 500 (not stored: the key is
// free); the AUTHORISATION creates the head from the pending record, and
// the retry under the same key gets the platform's replayed answer and
// records it.
func TestLostDetailsRecordAnswers500(t *testing.T) {
	onBothStores(t, func(t *testing.T, dyn bool) {
		e, fw := faulty(t, dyn, true)
		psp, body := challengePayment(t, e, "lost-details")
		named := strings.Replace(body, `{"details":`, `{"reference":"lost-details","details":`, 1)
		path := "/v1/ecom/" + testenv.SiteA + "/payments/details"
		r := downFrom(e, fw, "/payments/details", path, named, "Idempotency-Key", "lost-details")
		if r.Status != 500 || r.JSON(t)["errorCode"] != "yp_9000" {
			t.Fatalf("details whose record is lost: %d %s, want 500", r.Status, r.Body)
		}
		wantLost(t, e, "details")
		e.Notify()
		if h := record(t, e, psp); h.Reference != "lost-details" || h.Amount.Value != 1500 || h.AuthStatus() != payments.StateAuthorised {
			t.Fatalf("after the AUTHORISATION: %+v", h)
		}
		again := e.Do("POST", path, "A", named, "Idempotency-Key", "lost-details")
		if again.Status != 200 || again.Header.Get("Idempotent-Replayed") != "" || again.JSON(t)["pspReference"] != psp {
			t.Fatalf("retry: %d %s, want a fresh 200", again.Status, again.Body)
		}
		if h := record(t, e, psp); h.Auth.ResultCode != "Authorised" || h.Reference != "lost-details" {
			t.Fatalf("after the retry: %+v", h)
		}
	})
}

// A session whose record write is lost answers 500: the merchant never
// got its sessionData. The retry under the same key gets the same session
// from the platform (the same upstream key) and records it.
func TestLostSessionRecordAnswers500(t *testing.T) {
	onBothStores(t, func(t *testing.T, dyn bool) {
		e, fw := faulty(t, dyn, false)
		path, body := "/v1/ecom/"+testenv.SiteA+"/sessions", testenv.SessionBody("lost-session")
		r := downFrom(e, fw, "/sessions", path, body, "Idempotency-Key", "lost-session")
		if r.Status != 500 || strings.Contains(string(r.Body), "sessionData") {
			t.Fatalf("session whose record is lost: %d %s, want 500", r.Status, r.Body)
		}
		again := e.Do("POST", path, "A", body, "Idempotency-Key", "lost-session")
		id, _ := again.JSON(t)["id"].(string)
		if again.Status != 200 || id == "" || again.Header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("retry: %d %s", again.Status, again.Body)
		}
		calls := e.Upstream.Requests("/sessions")
		if len(calls) != 2 || calls[0].Header.Get("Idempotency-Key") != calls[1].Header.Get("Idempotency-Key") {
			t.Fatalf("%d upstream calls, want 2 under one key", len(calls))
		}
		if s, err := e.Store.GetSession(context.Background(), id); err != nil || s.SiteID != testenv.SiteA {
			t.Fatalf("session record %+v, %v", s, err)
		}
	})
}

// A capture whose answer's write is lost answers 200 received; the capture
// stays in flight until the recovery pass repeats its call under its key
// and records the platform's answer, and its CAPTURE notification counts
// it once: the record equals what the platform holds.
func TestLostCaptureAnswerRepairedByRecover(t *testing.T) {
	onBothStores(t, func(t *testing.T, dyn bool) {
		e, fw := faulty(t, dyn, false)
		psp := authorise(t, e, 1000)
		r := downFrom(e, fw, "/captures", "/v1/ecom/"+testenv.SiteA+"/payments/"+psp+"/captures",
			`{"amount":{"value":300,"currency":"EUR"},"reference":"cap-1"}`, "Idempotency-Key", "lost-capture")
		if r.Status != 200 || r.JSON(t)["status"] != "received" {
			t.Fatalf("capture whose answer's write is lost: %d %s", r.Status, r.Body)
		}
		wantLost(t, e, "capture")
		if h := record(t, e, psp); h.Totals.CapturesInFlight != 300 {
			t.Fatalf("before the pass: %+v, want the capture in flight", h.Totals)
		}
		e.Clock.Advance(payments.RecoverAfter + 1)
		if got, err := e.Payments.Recover(context.Background(), e.Store.(payments.InFlight), 100); err != nil || got.Answered != 1 {
			t.Fatalf("recovery pass: %+v, %v", got, err)
		}
		e.Notify()
		h := record(t, e, psp)
		sim, _ := e.Sim.Payment(psp)
		if v := h.View(); inFlight(h) || v.Captured != 300 || sim.CapturedValue != 300 || v.State != payments.StatePartiallyCaptured {
			t.Fatalf("after the pass and the notification: %+v %+v; the platform captured %d", v, h.Totals, sim.CapturedValue)
		}
		kinds := map[string]int{}
		for _, f := range e.Timeline(psp) {
			kinds[f.Kind+"/"+f.Origin]++
		}
		if kinds["capture/api"] != 1 || kinds["CAPTURE/notification"] != 1 {
			t.Fatalf("timeline %v: want the capture's answer and its notification once each", kinds)
		}
	})
}

// hasAPIFact reports whether a timeline holds the service's own fact of
// kind for the operation with pspReference op.
func hasAPIFact(facts []payments.Fact, kind, op string) bool {
	for _, f := range facts {
		if f.Origin == payments.OriginAPI && f.Kind == kind && f.PSPReference == op {
			return true
		}
	}
	return false
}
