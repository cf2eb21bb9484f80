package httpapi_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/queue"
	"github.com/yp/paysvc/shared/testenv"
	"github.com/yp/paysvc/shared/webhooks"
	"github.com/yp/paysvc/shared/webhooks/sender"
	"github.com/yp/paysvc/shared/webhooks/verify"
)

// A merchant retries its failed delivery: same X-Webhook-Id, the next
// attempt number; another merchant's is 404 yp_3007; a pending one 400.
func TestWebhookDeliveryRetry(t *testing.T) {
	stores(t, func(t *testing.T, e *testenv.Env) {
		ctx := context.Background()
		subscribe(t, e, "sub_a", testenv.MerchantA, "https://a.example/hooks")
		f := &flow{t: t, e: e, site: testenv.SiteA, key: "A"}
		f.pay(cardBody("4111111111111111", "737", "Jo", 1000))
		e.Notify()
		ds, err := e.SelfService.ListDeliveryPage(ctx, testenv.MerchantA, webhooks.DeliveryQuery{Limit: 10})
		if err != nil || len(ds) != 1 {
			t.Fatalf("deliveries %v, %v", ds, err)
		}
		id := ds[0].ID
		retry := "/v1/ecom/webhook-deliveries/" + id + "/retry"
		// Pending with its job queued: the schedule retries it.
		if r := e.Do("POST", retry, "A", `{}`); r.Status != 400 || r.JSON(t)["errorCode"] != "yp_2002" {
			t.Fatalf("retry of a pending delivery: %d %s", r.Status, r.Body)
		}
		// It failed after 3 attempts.
		if _, err := webhooks.MutateDelivery(ctx, e.SelfService, id, func(d *webhooks.Delivery) error {
			d.Status, d.Attempts, d.LastStatusCode, d.LastError = webhooks.StatusFailed, 3, 500, "HTTP 500 Internal Server Error"
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		failed := get(t, e, "/v1/ecom/webhook-deliveries?status=failed", "A", 200)["data"].([]any)
		if len(failed) != 1 || failed[0].(map[string]any)["lastError"] != "HTTP 500 Internal Server Error" || failed[0].(map[string]any)["attempts"].(float64) != 3 {
			t.Fatalf("failed deliveries %v", failed)
		}
		for _, c := range []struct {
			key, path string
			status    int
			code      string
		}{
			{"B", retry, 404, "yp_3007"},
			{"A", "/v1/ecom/webhook-deliveries/msg_unknown/retry", 404, "yp_3007"},
			{"AConfigOnly", retry, 403, "yp_1002"},
			{"ARestricted", retry, 403, "yp_1002"},
		} {
			if r := e.Do("POST", c.path, c.key, `{}`); r.Status != c.status || r.JSON(t)["errorCode"] != c.code {
				t.Fatalf("%s %s: %d %s, want %d %s", c.key, c.path, r.Status, r.Body, c.status, c.code)
			}
		}
		if r := e.Do("POST", retry, "A", `{"now":true}`); r.Status != 400 {
			t.Fatalf("retry with an unknown field: %d", r.Status)
		}
		before := len(e.Queue.Jobs())
		r := e.Do("POST", retry, "A", `{}`, "Idempotency-Key", "retry-1")
		if r.Status != 200 {
			t.Fatalf("retry: %d %s", r.Status, r.Body)
		}
		out := r.JSON(t)
		if out["id"] != id || out["status"] != "pending" || out["nextAttempt"].(float64) != 4 {
			t.Fatalf("retry answer %v", out)
		}
		jobs := e.Queue.Jobs()
		if len(jobs) != before+1 || jobs[len(jobs)-1] != (queue.Job{DeliveryID: id, Attempt: 4}) {
			t.Fatalf("jobs %v", jobs[before:])
		}
		// The same key replays; no second job.
		if again := e.Do("POST", retry, "A", `{}`, "Idempotency-Key", "retry-1"); again.Status != 200 || again.Header.Get("Idempotent-Replayed") != "true" || len(e.Queue.Jobs()) != before+1 {
			t.Fatalf("replay: %d, %d jobs", again.Status, len(e.Queue.Jobs()))
		}
	})
}

// The webhook test sends a signed test event (paysvc.webhook.test) to the merchant's endpoints
// and reports each answer; SSRF-refused targets are reported, not called.
func TestWebhookTest(t *testing.T) {
	stores(t, func(t *testing.T, e *testenv.Env) {
		secret := subscribe(t, e, "sub_ok", testenv.MerchantA, "https://ok.example/hooks")
		subscribe(t, e, "sub_down", testenv.MerchantA, "https://down.example/hooks")
		subscribe(t, e, "sub_b", testenv.MerchantB, "https://b.example/hooks")
		e.Hooks.Answer = func(req webhooks.Request) webhooks.Result {
			if strings.Contains(req.URL, "down") {
				return webhooks.Result{Err: errors.New("timeout: no complete answer within 15s"), Timeout: true, Duration: 15 * time.Second}
			}
			return webhooks.Result{StatusCode: 204, Duration: 42 * time.Millisecond}
		}
		r := e.Do("POST", "/v1/ecom/webhooks/test", "A", `{}`)
		if r.Status != 200 {
			t.Fatalf("test: %d %s", r.Status, r.Body)
		}
		out := r.JSON(t)
		results := out["results"].([]any)
		if out["eventCode"] != "paysvc.webhook.test" || len(results) != 2 {
			t.Fatalf("report %v", out)
		}
		for _, x := range results {
			res := x.(map[string]any)
			switch res["subscriptionId"] {
			case "sub_ok":
				if res["delivered"] != true || res["statusCode"].(float64) != 204 || res["latencyMs"].(float64) != 42 {
					t.Fatalf("sub_ok %v", res)
				}
			case "sub_down":
				if res["delivered"] != false || !strings.Contains(res["error"].(string), "timeout") {
					t.Fatalf("sub_down %v", res)
				}
			default:
				t.Fatalf("unexpected target %v", res)
			}
		}
		// Signed like every delivery: the merchant's secret verifies it.
		for _, req := range e.Hooks.Requests() {
			if !strings.Contains(req.URL, "ok.example") {
				continue
			}
			h := sender.Headers(req)
			if err := verify.Verify(secret, h, req.Body, req.Timestamp, 5*time.Minute); err != nil {
				t.Fatalf("the test event does not verify: %v", err)
			}
			if !strings.Contains(string(req.Body), `"eventCode":"paysvc.webhook.test"`) || req.Attempt != 1 || !strings.HasPrefix(req.ID, "msg_test_") {
				t.Fatalf("test event %s %+v", req.Body, req)
			}
		}
		// One subscription; another merchant's or an unknown one is 404 yp_3007.
		sent := len(e.Hooks.Requests())
		if r := e.Do("POST", "/v1/ecom/webhooks/test", "A", `{"subscriptionId":"sub_ok"}`); r.Status != 200 || len(r.JSON(t)["results"].([]any)) != 1 {
			t.Fatalf("one subscription: %d %s", r.Status, r.Body)
		}
		for _, body := range []string{`{"subscriptionId":"sub_b"}`, `{"subscriptionId":"sub_nope"}`} {
			if r := e.Do("POST", "/v1/ecom/webhooks/test", "A", body); r.Status != 404 || r.JSON(t)["errorCode"] != "yp_3007" {
				t.Fatalf("%s: %d %s", body, r.Status, r.Body)
			}
		}
		if r := e.Do("POST", "/v1/ecom/webhooks/test", "A", `{"subscriptionId":""}`); r.Status != 400 {
			t.Fatalf("empty subscriptionId: %d", r.Status)
		}
		if n := len(e.Hooks.Requests()); n != sent+1 {
			t.Fatalf("%d test events sent, want %d", n, sent+1)
		}
		// A merchant not set up for ecommerce: 422 yp_5003.
		if r := e.Do("POST", "/v1/ecom/webhooks/test", "NotEcom", `{}`); r.Status != 422 {
			t.Fatalf("merchant not set up: %d %s", r.Status, r.Body)
		}
	})
}

// The SSRF rules apply to the test event as to every delivery: the real
// sender refuses a private target without sending.
func TestWebhookTestRefusesPrivateTargets(t *testing.T) {
	e := testenv.New(t)
	ctx := context.Background()
	subscribe(t, e, "sub_pub", testenv.MerchantA, "https://hooks.example/")
	sender := sender.New(sender.Config{Timeout: time.Second})
	e.Hooks.Answer = func(req webhooks.Request) webhooks.Result {
		req.URL = "https://10.0.0.1/hooks" // what a subscription to a private address would send to
		return sender.Send(ctx, req)
	}
	out := e.Do("POST", "/v1/ecom/webhooks/test", "A", `{}`).JSON(t)
	res := out["results"].([]any)[0].(map[string]any)
	if res["delivered"] != false || !strings.Contains(res["error"].(string), "refused") {
		t.Fatalf("private target %v", res)
	}
}
