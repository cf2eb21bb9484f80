package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/provision"
	"github.com/yp/paysvc/shared/testenv"
	"github.com/yp/paysvc/shared/webhooks"
)

// stores runs fn on the embedded store and on DynamoDB (moto).
func stores(t *testing.T, fn func(t *testing.T, e *testenv.Env)) {
	onBothStores(t, func(t *testing.T, dyn bool) { fn(t, testenv.NewWith(t, testenv.Options{Dynamo: dyn})) })
}

// onBothStores runs test on the embedded store (dyn false) and on DynamoDB.
func onBothStores(t *testing.T, test func(t *testing.T, dyn bool)) {
	for _, dyn := range []bool{false, true} {
		name := "embedded"
		if dyn {
			name = "dynamo"
		}
		t.Run(name, func(t *testing.T) { test(t, dyn) })
	}
}

func get(t *testing.T, e *testenv.Env, path, key string, want int) map[string]any {
	t.Helper()
	r := e.Do("GET", path, key, "")
	if r.Status != want {
		t.Fatalf("GET %s: %d %s, want %d", path, r.Status, r.Body, want)
	}
	return r.JSON(t)
}

// A payment as its merchant sees it: amounts, in-flight amounts, state,
// brand and the timeline; nobody else sees it.
func TestPaymentLookup(t *testing.T) {
	stores(t, func(t *testing.T, e *testenv.Env) {
		f := &flow{t: t, e: e, site: testenv.SiteA, key: "A"}
		psp := f.captured(1000)
		e.Clock.Advance(time.Second) // the timeline orders by time
		f.post("/payments/"+psp+"/refunds", amountBody(250), 200)
		path := "/v1/ecom/" + testenv.SiteA + "/payments/" + psp
		v := get(t, e, path, "A", 200)
		amount := func(name string) float64 { return v[name].(map[string]any)["value"].(float64) }
		if v["pspReference"] != psp || v["siteId"] != testenv.SiteA || v["merchantReference"] != "ord-1111" || v["state"] != "Captured" ||
			amount("authorisedAmount") != 1000 || amount("capturedAmount") != 1000 || amount("refundedAmount") != 0 ||
			amount("refundsInFlight") != 250 || amount("capturesInFlight") != 0 || amount("refundableAmount") != 750 {
			t.Fatalf("payment %v", v)
		}
		if pm, _ := v["paymentMethod"].(map[string]any); pm["brand"] != "visa" {
			t.Fatalf("payment method %v", v["paymentMethod"])
		}
		kinds := timelineKinds(v)
		if want := "payment capture-requested capture refund-requested refund"; kinds != want {
			t.Fatalf("timeline %s, want %s", kinds, want)
		}
		raw := string(mustJSON(t, v))
		for _, secret := range []string{"op_", "merchantId", "version", "reservations", "4111", "BA_"} {
			if strings.Contains(raw, secret) {
				t.Fatalf("the answer shows %q: %s", secret, raw)
			}
		}
		// The notifications join the timeline, oldest first, and settle the refund.
		e.Notify()
		v = get(t, e, path, "A", 200)
		if kinds := timelineKinds(v); kinds != "payment capture-requested capture refund-requested refund AUTHORISATION CAPTURE REFUND" {
			t.Fatalf("timeline after notifications: %s", kinds)
		}
		if v["state"] != "PartiallyRefunded" || v["refundedAmount"].(map[string]any)["value"].(float64) != 250 ||
			v["refundsInFlight"].(map[string]any)["value"].(float64) != 0 {
			t.Fatalf("after REFUND: %v", v)
		}
		last := v["timeline"].([]any)[7].(map[string]any)
		if last["source"] != "notification" || last["success"] != true || last["pspReference"] == psp || last["pspReference"] == "" {
			t.Fatalf("REFUND entry %v", last)
		}

		// Another merchant, another site of the merchant, an unknown payment:
		// all 404 yp_3006; no permission: 403.
		for _, c := range []struct{ path, key string }{
			{"/v1/ecom/" + testenv.SiteB + "/payments/" + psp, "B"},
			{"/v1/ecom/" + testenv.SiteAAdvanced + "/payments/" + psp, "A"},
			{"/v1/ecom/" + testenv.SiteA + "/payments/NOPE000000000000", "A"},
		} {
			if r := get(t, e, c.path, c.key, 404); r["errorCode"] != "yp_3006" {
				t.Fatalf("%s with %s: %v", c.path, c.key, r)
			}
		}
		if r := get(t, e, path, "AConfigOnly", 403); r["errorCode"] != "yp_1002" {
			t.Fatalf("without payments-read: %v", r)
		}
		// Other methods on the path: 405 naming GET.
		if r := e.Do("POST", path, "A", `{}`); r.Status != 405 || r.Header.Get("Allow") != "GET" {
			t.Fatalf("POST on the lookup: %d %s", r.Status, r.Header.Get("Allow"))
		}
	})
}

func timelineKinds(v map[string]any) string {
	var kinds []string
	for _, x := range v["timeline"].([]any) {
		kinds = append(kinds, x.(map[string]any)["kind"].(string))
	}
	return strings.Join(kinds, " ")
}

// The event history: exactly the webhook bodies, newest first, in pages,
// filtered, only the merchant's own; and the deliveries list.
func TestEventHistoryAndDeliveries(t *testing.T) {
	stores(t, func(t *testing.T, e *testenv.Env) {
		ctx := context.Background()
		subscribe(t, e, "sub_a", testenv.MerchantA, "https://a.example/hooks")
		f := &flow{t: t, e: e, site: testenv.SiteA, key: "A"}
		psp1 := f.captured(1000)
		f.post("/payments/"+psp1+"/refunds", amountBody(100), 200)
		psp2 := f.pay(cardBody("4111111111111111", "737", "Jo", 500))["pspReference"].(string)
		other := &flow{t: t, e: e, site: testenv.SiteB, key: "B"}
		otherPSP := other.pay(cardBody("4111111111111111", "737", "Bo", 700))["pspReference"].(string)
		e.Notify()

		page := get(t, e, "/v1/ecom/events?limit=100", "A", 200)
		data := page["data"].([]any)
		var codes []string
		for _, x := range data {
			ev := x.(map[string]any)
			codes = append(codes, ev["eventCode"].(string)+"/"+ev["paymentPspReference"].(string))
			if ev["paymentPspReference"] == otherPSP {
				t.Fatalf("merchant B's event listed for A: %v", ev)
			}
		}
		want := fmt.Sprintf("[AUTHORISATION/%s REFUND/%s CAPTURE/%s AUTHORISATION/%s]", psp2, psp1, psp1, psp1)
		if fmt.Sprint(codes) != want || page["hasMore"] != false {
			t.Fatalf("events %v (hasMore %v), want %s", codes, page["hasMore"], want)
		}
		// The payload is what the webhook received, byte for byte.
		ds, err := e.SelfService.ListDeliveryPage(ctx, testenv.MerchantA, webhooks.DeliveryQuery{Limit: 10})
		if err != nil || len(ds) != 4 {
			t.Fatalf("deliveries %d, %v", len(ds), err)
		}
		first := data[0].(map[string]any)
		for _, d := range ds {
			if d.EventID == first["id"] && string(mustJSON(t, first["payload"])) != compactJSON(t, d.Payload) {
				t.Fatalf("payload %s, delivered %s", mustJSON(t, first["payload"]), d.Payload)
			}
		}
		// Pages of 3, then the rest.
		p1 := get(t, e, "/v1/ecom/events?limit=3", "A", 200)
		if len(p1["data"].([]any)) != 3 || p1["hasMore"] != true {
			t.Fatalf("page 1 %v", p1)
		}
		lastID := p1["data"].([]any)[2].(map[string]any)["id"].(string)
		p2 := get(t, e, "/v1/ecom/events?limit=3&startingAfter="+lastID, "A", 200)
		if d := p2["data"].([]any); len(d) != 1 || p2["hasMore"] != false || d[0].(map[string]any)["eventCode"] != "AUTHORISATION" {
			t.Fatalf("page 2 %v", p2)
		}
		// Filters.
		byPSP := get(t, e, "/v1/ecom/events?pspReference="+psp1, "A", 200)["data"].([]any)
		byCode := get(t, e, "/v1/ecom/events?eventCode=REFUND", "A", 200)["data"].([]any)
		if len(byPSP) != 3 || len(byCode) != 1 {
			t.Fatalf("by psp %d, by code %d", len(byPSP), len(byCode))
		}
		// Bad parameters are 400 naming them; another merchant's cursor too.
		for q, field := range map[string]string{
			"limit=0": "limit", "limit=101": "limit", "limit=x": "limit", "colour=red": "colour",
			"eventCode=refund": "eventCode", "limit=1&limit=2": "limit",
		} {
			r := get(t, e, "/v1/ecom/events?"+q, "A", 400)
			if r["errorCode"] != "yp_2002" || r["fields"].([]any)[0].(map[string]any)["field"] != field {
				t.Fatalf("%s: %v", q, r)
			}
		}
		otherEvent := get(t, e, "/v1/ecom/events", "B", 200)["data"].([]any)[0].(map[string]any)["id"].(string)
		if r := get(t, e, "/v1/ecom/events?startingAfter="+otherEvent, "A", 400); r["fields"].([]any)[0].(map[string]any)["field"] != "startingAfter" {
			t.Fatalf("another merchant's cursor: %v", r)
		}
		if r := get(t, e, "/v1/ecom/events", "AConfigOnly", 403); r["errorCode"] != "yp_1002" {
			t.Fatalf("without webhooks permission: %v", r)
		}
		if r := get(t, e, "/v1/ecom/events", "ARestricted", 403); r["errorCode"] != "yp_1002" {
			t.Fatalf("a key limited to sites: %v", r)
		}

		// Deliveries: all pending, newest first, in pages; filters validated.
		dl := get(t, e, "/v1/ecom/webhook-deliveries?limit=2", "A", 200)
		if len(dl["data"].([]any)) != 2 || dl["hasMore"] != true {
			t.Fatalf("deliveries %v", dl)
		}
		next := dl["data"].([]any)[1].(map[string]any)["id"].(string)
		if d2 := get(t, e, "/v1/ecom/webhook-deliveries?limit=2&startingAfter="+next, "A", 200); len(d2["data"].([]any)) != 2 || d2["hasMore"] != false {
			t.Fatalf("deliveries page 2 %v", d2)
		}
		if d := get(t, e, "/v1/ecom/webhook-deliveries?status=failed", "A", 200); len(d["data"].([]any)) != 0 {
			t.Fatalf("failed deliveries %v", d)
		}
		if r := get(t, e, "/v1/ecom/webhook-deliveries?status=lost", "A", 400); r["fields"].([]any)[0].(map[string]any)["field"] != "status" {
			t.Fatalf("bad status %v", r)
		}
		if d := get(t, e, "/v1/ecom/webhook-deliveries", "B", 200); len(d["data"].([]any)) != 0 {
			t.Fatalf("merchant B (no subscription) sees deliveries %v", d)
		}
	})
}

func compactJSON(t *testing.T, raw []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	return string(mustJSON(t, v))
}

// subscribe adds a webhook subscription and returns its secret.
func subscribe(t *testing.T, e *testenv.Env, id, merchant, url string) string {
	t.Helper()
	p := &provision.Provisioner{Store: e.Store, Clock: e.Clock}
	_, secret, err := p.PutSubscription(context.Background(), provision.SubscriptionSpec{ID: id, MerchantID: merchant, URL: url})
	if err != nil {
		t.Fatal(err)
	}
	return secret
}
