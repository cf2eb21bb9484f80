package tests

import (
	"bytes"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/app"
)

// TestExpiryNoticeE2E (docs/expiry.md), on both stores and the injected
// clock: GET payment shows when a manual card authorisation expires (28
// days, from the method table); a day before, one scheduler pass sends
// the merchant one signed paysvc.authorisation.expiring service event
// with the uncaptured amount, valid against docs/openapi.yaml's
// serviceEvent and on the payment's timeline; the next pass sends
// nothing, and a payment captured meanwhile gets none. At 28 days the
// simulator expires the remainder on its clock and sends EXPIRE in its
// published shape (held to the vendored Webhooks-v1); the payment shows
// nothing capturable and no expiry after it.
func TestExpiryNoticeE2E(t *testing.T) {
	v := upstreamValidator(t)
	var mu sync.Mutex
	var expires []string
	onNotify := func(body []byte) {
		if !bytes.Contains(body, []byte(`"eventCode":"EXPIRE"`)) {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		expires = append(expires, string(body))
		if viol := v.Notification(body); len(viol) > 0 {
			t.Errorf("EXPIRE violates Webhooks-v1: %s\n  body: %s", strings.Join(viol, "\n  "), body)
		}
	}
	onBothStores(t, whOptions{allowLocal: true, onNotify: onNotify}, func(t *testing.T, e *whEnv) {
		mu.Lock()
		expires = nil
		mu.Unlock()
		tick, err := app.Scheduler(e.a, e.queues.Queue)
		if err != nil {
			t.Fatal(err)
		}
		authorisedAt := e.clk.Now()
		psp := e.pay(1000, "")
		captured := e.payCaptured("")

		view := e.call(http.MethodGet, "/v1/ecom/"+e2eSite+"/payments/"+psp, "", 200)
		wantAt := authorisedAt.Add(28 * 24 * time.Hour).UTC().Format(time.RFC3339)
		if view["authorisationExpiresAt"] != wantAt || view["authorisationExpirySource"] != "table" {
			t.Fatalf("expiry %v (%v), want %s from the table", view["authorisationExpiresAt"], view["authorisationExpirySource"], wantAt)
		}
		if v := e.call(http.MethodGet, "/v1/ecom/"+e2eSite+"/payments/"+captured, "", 200); v["authorisationExpiresAt"] != nil {
			t.Fatalf("a captured payment shows an expiry: %v", v["authorisationExpiresAt"])
		}
		before := len(e.hooks.requests())

		e.clk.Advance(27*24*time.Hour - time.Minute)
		if p, err := tick(e.ctx); err != nil || p.NoticesSent != 0 {
			t.Fatalf("before the lead: %+v, %v", p, err)
		}
		e.clk.Advance(2 * time.Minute)
		p, err := tick(e.ctx)
		if err != nil || p.NoticesSent != 1 {
			t.Fatalf("pass a day before expiry: %+v, %v; want one notice", p, err)
		}
		e.runDue()
		var notices []map[string]any
		for _, r := range e.hooks.requests()[before:] {
			if it := r.item(t); it["eventCode"] == "paysvc.authorisation.expiring" {
				notices = append(notices, it)
			}
		}
		if len(notices) != 1 {
			t.Fatalf("%d expiry notices delivered, want 1", len(notices))
		}
		n := notices[0]
		amount, _ := n["amount"].(map[string]any)
		ad, _ := n["additionalData"].(map[string]any)
		if n["pspReference"] != psp || amount["value"] != float64(1000) || ad["authorisationExpiresAt"] != wantAt ||
			ad["authorisationExpirySource"] != "table" || n["merchantAccountCode"] != e2eAccount {
			t.Fatalf("notice %v", n)
		}
		found := false
		for _, f := range e.timeline(psp) {
			found = found || f.Kind == "paysvc.authorisation.expiring"
		}
		if !found {
			t.Fatal("the notice is not on the payment's timeline")
		}
		if v := e.payment(psp).View(); v.Capturable != 1000 || v.Refunded != 0 || v.State != "Authorised" {
			t.Fatalf("the notice moved money: %+v", v)
		}
		if p, err := tick(e.ctx); err != nil || p.NoticesSent != 0 {
			t.Fatalf("second pass: %+v, %v; want nothing sent", p, err)
		}

		if got := e.sim.ExpireAuthorisations(); len(got) != 0 {
			t.Fatalf("expired before 28 days: %v", got)
		}
		e.clk.Advance(24 * time.Hour)
		if got := e.sim.ExpireAuthorisations(); !slices.Equal(got, []string{psp}) {
			t.Fatalf("expired %v, want %s alone (the other is captured)", got, psp)
		}
		e.settle()
		mu.Lock()
		nExpire := len(expires)
		mu.Unlock()
		if nExpire != 1 || !strings.Contains(expires[0], `"pspReference":"`+psp+`"`) || strings.Contains(expires[0], "originalReference") {
			t.Fatalf("EXPIRE notifications %v, want one naming %s in pspReference", expires, psp)
		}
		after := e.call(http.MethodGet, "/v1/ecom/"+e2eSite+"/payments/"+psp, "", 200)
		if c, _ := after["capturableAmount"].(map[string]any); c["value"] != float64(0) || after["authorisationExpiresAt"] != nil {
			t.Fatalf("after EXPIRE: capturable %v, expiry %v; want 0 and none", after["capturableAmount"], after["authorisationExpiresAt"])
		}
	})
}
