package tests

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/webhooks"
	"github.com/yp/paysvc/shared/webhooks/verify"
)

// call sends a request to the service's API and decodes its JSON answer.
func (e *whEnv) call(method, path, body string, want int) map[string]any {
	e.t.Helper()
	return e.callAs(e.key, method, path, body, want)
}

// callAs is call with another API key and, in pairs, more headers.
func (e *whEnv) callAs(key, method, path, body string, want int, headers ...string) map[string]any {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, e.base+path, rd)
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		e.t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, raw, want)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		e.t.Fatalf("%s %s: %s: %v", method, path, raw, err)
	}
	return out
}

// TestSelfServiceE2E, through the whole service (real HTTP, the
// simulator's signed notifications, the queue and dispatcher) on both
// stores (the embedded one with the local queue; DynamoDB with SQS):
// partial refunds reach the merchant as REFUND webhooks and settle the
// record; the payment lookup shows it; the event history holds exactly
// the delivered bodies; a failed delivery retried by the merchant arrives
// with the same X-Webhook-Id and the next attempt number; the test event (paysvc.webhook.test)
// reaches the endpoint signed. Another merchant sees and retries none of
// it (otherMerchantSeesNothing).
func TestSelfServiceE2E(t *testing.T) {
	onBothStores(t, whOptions{allowLocal: true}, func(t *testing.T, e *whEnv) {
		psp := e.payCaptured("")
		r1 := e.api("/payments/"+psp+"/refunds", `{"amount":{"value":300,"currency":"EUR"},"reference":"rma-1"}`, 200)
		r2 := e.api("/payments/"+psp+"/refunds", `{"amount":{"value":200,"currency":"EUR"},"reference":"rma-2"}`, 200)
		e.api("/payments/"+psp+"/refunds", `{"amount":{"value":501,"currency":"EUR"}}`, 400)
		e.settle()

		var codes []string
		for _, r := range e.hooks.requests() {
			codes = append(codes, r.item(t)["eventCode"].(string)+"/"+r.item(t)["pspReference"].(string))
		}
		if len(codes) != 4 || !strings.HasPrefix(codes[2], "REFUND/") || !strings.HasPrefix(codes[3], "REFUND/") {
			t.Fatalf("delivered %v", codes)
		}
		if v := e.payment(psp).View(); v.State != payments.StatePartiallyRefunded || v.Refunded != 500 || v.RefundsInFlight != 0 {
			t.Fatalf("record after the REFUND webhooks: %+v", v)
		}
		v := e.call("GET", "/v1/ecom/"+e2eSite+"/payments/"+psp, "", 200)
		if v["state"] != "PartiallyRefunded" || v["refundableAmount"].(map[string]any)["value"].(float64) != 500 {
			t.Fatalf("lookup %v", v)
		}
		seen := map[string]bool{}
		for _, x := range v["timeline"].([]any) {
			entry := x.(map[string]any)
			seen[fmt.Sprint(entry["pspReference"])+"/"+fmt.Sprint(entry["kind"])] = true
		}
		for _, r := range []map[string]any{r1, r2} {
			if !seen[r["pspReference"].(string)+"/refund"] || !seen[r["pspReference"].(string)+"/REFUND"] {
				t.Fatalf("timeline lacks refund %s: %v", r["pspReference"], v["timeline"])
			}
		}

		// The event history is what the webhooks received.
		events := e.call("GET", "/v1/ecom/events?pspReference="+psp, "", 200)["data"].([]any)
		reqs := e.hooks.requests()
		if len(events) != len(reqs) {
			t.Fatalf("%d events, %d webhooks", len(events), len(reqs))
		}
		// (This test's clock stands still, so their order is by id: compare as sets.)
		delivered := map[string]bool{}
		for _, r := range reqs {
			delivered[compact(t, r.body)] = true
		}
		for i, x := range events {
			got, _ := json.Marshal(x.(map[string]any)["payload"])
			if !delivered[string(got)] {
				t.Fatalf("event %d is not a delivered webhook body: %s", i, got)
			}
		}

		// A delivery that failed: the merchant retries it.
		e.hooks.answer = func(int) int { return http.StatusServiceUnavailable }
		e.api("/payments/"+psp+"/refunds", `{"amount":{"value":100,"currency":"EUR"}}`, 200)
		e.settle()
		pending := e.deliveries(webhooks.StatusPending)
		if len(pending) != 1 {
			t.Fatalf("pending deliveries %+v", pending)
		}
		id := pending[0].ID
		if _, err := webhooks.MutateDelivery(e.ctx, e.a.Stores.Deliveries, id, func(d *webhooks.Delivery) error {
			d.Status, d.NextAttemptAt = webhooks.StatusFailed, nil // as after its last attempt
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		e.runDue() // nothing is due: its scheduled job waits for the retry delay
		failed := e.call("GET", "/v1/ecom/webhook-deliveries?status=failed", "", 200)["data"].([]any)
		if len(failed) != 1 || failed[0].(map[string]any)["lastStatusCode"].(float64) != 503 {
			t.Fatalf("failed deliveries %v", failed)
		}
		// Its scheduled job, once due, finds it failed and is dropped.
		e.clk.Advance(webhooks.NominalDelay(2))
		if n := e.runDue(); n != 1 || len(e.hooks.requests()) != len(reqs)+1 {
			t.Fatalf("the stale job: %d run, %d requests", n, len(e.hooks.requests()))
		}
		e.otherMerchantSeesNothing(psp, id)
		e.hooks.answer = nil
		before := len(e.hooks.requests())
		out := e.call("POST", "/v1/ecom/webhook-deliveries/"+id+"/retry", `{}`, 200)
		if out["nextAttempt"].(float64) != 2 {
			t.Fatalf("retry %v", out)
		}
		e.runDue()
		reqs = e.hooks.requests()
		if len(reqs) != before+1 || reqs[before].header.Get("X-Webhook-Id") != id || reqs[before].header.Get("X-Webhook-Delivery-Attempt") != "2" {
			t.Fatalf("retried delivery: %d requests, headers %v", len(reqs)-before, reqs[len(reqs)-1].header)
		}
		if ds := e.deliveries(webhooks.StatusDelivered); len(ds) != 5 {
			t.Fatalf("%d delivered, want 5", len(ds))
		}

		// The test event (paysvc.webhook.test), signed like every delivery.
		rep := e.call("POST", "/v1/ecom/webhooks/test", `{}`, 200)
		res := rep["results"].([]any)[0].(map[string]any)
		if rep["eventCode"] != "paysvc.webhook.test" || res["delivered"] != true || res["statusCode"].(float64) != 200 {
			t.Fatalf("test %v", rep)
		}
		last := e.hooks.requests()[len(e.hooks.requests())-1]
		if err := verify.Verify(e.secret, last.header, last.body, e.clk.Now(), 0); err != nil || last.item(t)["eventCode"] != "paysvc.webhook.test" ||
			last.header.Get("X-Webhook-Id") != res["webhookId"] {
			t.Fatalf("test event: %v %v", err, last.header)
		}
	})
}

func compact(t *testing.T, raw []byte) string {
	t.Helper()
	var v any
	decodeJSON(t, raw, &v)
	b, _ := json.Marshal(v)
	return string(b)
}

// otherMerchantSeesNothing: another merchant, with a payment and a webhook
// of its own, can neither see nor act on this merchant's payment psp,
// events and failed delivery id (404 as for unknown ones, empty filters),
// and this merchant does not see its payment; id stays failed and unsent.
func (e *whEnv) otherMerchantSeesNothing(psp, id string) {
	t := e.t
	t.Helper()
	const otherSite = "site_e2e_other"
	hooks := newHookReceiver(t)
	key, _ := e.seedMerchant(tenant.Merchant{ID: "m_e2e_other", Name: "Other Shop", Country: "NL", Active: true,
		CaptureMode: tenant.CaptureManual, Ecommerce: true, UpstreamAccount: "E2EOtherECOM", ClientKey: "test_E2EOTHER", SplitAccount: "BA_e2e_other"},
		otherSite, "sub_e2e_other", hooks)
	ourRequests := len(e.hooks.requests())
	otherPSP := e.payAs(key, otherSite, 700, "", "")
	e.settle()
	if n := len(hooks.requests()); n != 1 {
		t.Fatalf("the other merchant's webhook got %d requests", n)
	}

	for _, c := range []struct {
		method, path, body, code string
	}{
		{"GET", "/v1/ecom/" + otherSite + "/payments/" + psp, "", "yp_3006"},
		{"GET", "/v1/ecom/" + e2eSite + "/payments/" + psp, "", "yp_3004"},
		{"POST", "/v1/ecom/" + otherSite + "/payments/" + psp + "/refunds", `{"amount":{"value":100,"currency":"EUR"}}`, "yp_3006"},
		{"POST", "/v1/ecom/webhook-deliveries/" + id + "/retry", `{}`, "yp_3007"},
		{"POST", "/v1/ecom/webhooks/test", `{"subscriptionId":"sub_e2e"}`, "yp_3007"},
	} {
		if r := e.callAs(key, c.method, c.path, c.body, 404); r["errorCode"] != c.code {
			t.Fatalf("another merchant's %s %s: %v, want %s", c.method, c.path, r, c.code)
		}
	}
	if r := e.call("GET", "/v1/ecom/"+e2eSite+"/payments/"+otherPSP, "", 404); r["errorCode"] != "yp_3006" {
		t.Fatalf("the other merchant's payment: %v", r)
	}
	for _, c := range []struct {
		key, query, want string // want: the listed items as eventCode/pspReference
	}{
		{key, "/v1/ecom/events?pspReference=" + psp, ""},
		{key, "/v1/ecom/events?limit=100", "AUTHORISATION/" + otherPSP},
		{key, "/v1/ecom/webhook-deliveries?limit=100", "AUTHORISATION/" + otherPSP},
		{key, "/v1/ecom/webhook-deliveries?status=failed", ""},
		{e.key, "/v1/ecom/events?pspReference=" + otherPSP, ""},
	} {
		var got []string
		for _, x := range e.callAs(c.key, "GET", c.query, "", 200)["data"].([]any) {
			item := x.(map[string]any)
			got = append(got, fmt.Sprint(item["eventCode"], "/", item["pspReference"]))
		}
		if strings.Join(got, " ") != c.want {
			t.Fatalf("%s: %v, want %q", c.query, got, c.want)
		}
	}
	for _, x := range e.call("GET", "/v1/ecom/webhook-deliveries?limit=100", "", 200)["data"].([]any) {
		if x.(map[string]any)["pspReference"] == otherPSP {
			t.Fatalf("the other merchant's delivery is listed: %v", x)
		}
	}
	if ds := e.deliveries(webhooks.StatusFailed); len(ds) != 1 || ds[0].ID != id || len(e.hooks.requests()) != ourRequests {
		t.Fatalf("after the other merchant's retry: failed %+v, %d requests (%d before)", ds, len(e.hooks.requests()), ourRequests)
	}
}
