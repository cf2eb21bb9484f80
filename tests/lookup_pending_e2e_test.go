package tests

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/yp/paysvc/shared/payments"
)

// TestLookupOfPendingRecords, through the whole service: a payment that
// starts with an action is answered without a pspReference and recorded
// under an internal pending key; GET payments/{key} answers 404 yp_3006
// like an unknown payment before and after the pending record is bound to
// the payment's pspReference, and the payment is found under its
// pspReference only, without the internal key in its answer.
func TestLookupOfPendingRecords(t *testing.T) {
	m := newMinimalEnv(t)
	ref, out := m.start("5454545454545454", nativeThreeDS)
	m.wantAnswer(out, "IdentifyShopper", false)
	key := payments.PendingKey(e2eMerchant, e2eSite, ref)
	if p := m.payment(key); p.Reference != ref || p.BoundTo != "" {
		t.Fatalf("pending record %+v", p)
	}
	notFound := func(psp string) {
		t.Helper()
		r := m.call("GET", "/v1/ecom/"+e2eSite+"/payments/"+psp, "", 404)
		if r["errorCode"] != "yp_3006" || strings.Contains(r["message"].(string), "pending") {
			t.Fatalf("lookup of %s: %v, want 404 yp_3006 as for an unknown payment", psp, r)
		}
	}
	notFound(key) // unbound

	out = m.details(out, ref, true)
	m.wantAnswer(out, "ChallengeShopper", false)
	out = m.details(out, ref, true)
	m.wantAnswer(out, "Authorised", true)
	psp := out["pspReference"].(string)
	m.settle()
	if p := m.payment(key); p.BoundTo != psp {
		t.Fatalf("pending record not bound to %s: %+v", psp, p)
	}
	notFound(key) // bound to the payment
	notFound("pending_" + strings.Repeat("0", 40))

	v := m.call("GET", "/v1/ecom/"+e2eSite+"/payments/"+psp, "", 200)
	if v["pspReference"] != psp || v["merchantReference"] != ref || v["state"] != "Authorised" {
		t.Fatalf("lookup of the payment: %v", v)
	}
	if raw, _ := json.Marshal(v); strings.Contains(string(raw), "pending_") {
		t.Fatalf("the payment's answer shows an internal key: %s", raw)
	}
}
