package tests

import (
	"strings"
	"testing"
)

// TestLambdaWrongMethodIs405 sends each function the event API Gateway
// sends for the ANY method of its paths (TestTemplateWrongMethodGoesToTheFunction):
// the same resource with another method. Deployed, as locally, the answer
// is 405 yp_9005 with Allow naming the path's method.
func TestLambdaWrongMethodIs405(t *testing.T) {
	e := newLambdaEnv(t)
	events := map[string]string{ // route -> sample event
		"GET /v1/ecom/config":                                                     "config",
		"POST /v1/ecom/{siteId}/sessions":                                         "sessions",
		"POST /v1/ecom/{siteId}/payment-methods":                                  "payment-methods",
		"POST /v1/ecom/{siteId}/payments":                                         "payments",
		"POST /v1/ecom/{siteId}/payments/details":                                 "payments-details",
		"DELETE /v1/ecom/{siteId}/stored-payment-methods/{storedPaymentMethodId}": "stored-payment-methods-delete",
		"POST /v1/ecom/{siteId}/payments/{pspReference}/captures":                 "captures",
		"POST /v1/ecom/{siteId}/payments/{pspReference}/reversals":                "reversals",
		"POST /v1/ecom/{siteId}/payments/{pspReference}/cancels":                  "cancels",
		"POST /v1/ecom/{siteId}/payments/{pspReference}/amount-updates":           "amount-updates",
		"POST /v1/ecom/{siteId}/payments/{pspReference}/refunds":                  "refunds",
		"GET /v1/ecom/{siteId}/payments/{pspReference}":                           "payment-lookup",
		"GET /v1/ecom/events":                                                     "events",
		"GET /v1/ecom/webhook-deliveries":                                         "webhook-deliveries",
		"POST /v1/ecom/webhook-deliveries/{deliveryId}/retry":                     "webhook-delivery-retry",
		"POST /v1/ecom/webhooks/test":                                             "webhooks-test",
		"POST /v1/notifications/upstream":                                         "notification-authorisation",
	}
	if len(events) != len(wantRoutes) {
		t.Fatalf("%d events for %d routes", len(events), len(wantRoutes))
	}
	started := map[string]*function{}
	for route, fn := range wantRoutes {
		name, ok := events[route]
		if !ok {
			t.Errorf("no sample event for %s", route)
			continue
		}
		method, _, _ := strings.Cut(route, " ")
		if started[fn] == nil {
			started[fn] = e.start(t, fn)
		}
		for _, wrong := range []string{"GET", "PUT", "PATCH", "POST", "DELETE"} {
			if wrong == method {
				continue
			}
			raw := editEvent(t, sampleEvent(t, name), func(ev map[string]any) {
				ev["httpMethod"] = wrong
				ev["requestContext"].(map[string]any)["httpMethod"] = wrong
				ev["body"] = nil
			})
			inv := started[fn].invoke(t, raw)
			body := wantStatus(t, inv, 405)
			if body["errorCode"] != "yp_9005" || inv.resp.header("Allow") != method {
				t.Errorf("%s %s on %s: %v, Allow %q; want yp_9005, Allow %s", wrong, route, fn, body, inv.resp.header("Allow"), method)
			}
		}
	}
}
