package smoketest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/aws/aws-lambda-go/events"
)

// Kind is what a function serves, which decides its probes.
type Kind string

// The kinds of function (PAYSVC_SMOKE_TARGETS maps each function name to one).
const (
	KindConfig        Kind = "config"
	KindSessions      Kind = "sessions"
	KindPayments      Kind = "payments"
	KindModifications Kind = "modifications"
	KindLookups       Kind = "lookups"
	KindWebhooks      Kind = "webhooks"
	KindNotifications Kind = "notifications"
	KindDispatcher    Kind = "dispatcher"
	KindScheduler     Kind = "recovery"
)

// Kinds lists every kind.
var Kinds = []Kind{KindConfig, KindSessions, KindPayments, KindModifications, KindLookups, KindWebhooks,
	KindNotifications, KindDispatcher, KindScheduler}

// Canary is the canary merchant's API key and site (the secret
// CanaryKeySecretArn names, JSON {"apiKey","siteId"}): a merchant kept for
// the smoke test, whose key needs the config, sessions, payments,
// captures, payments-read and webhooks permissions.
type Canary struct {
	APIKey string `json:"apiKey"`
	SiteID string `json:"siteId"`
}

// Env is what the probes depend on.
type Env struct {
	Live   bool
	Canary *Canary // nil: none configured
	// Tag is unique per deployment, function and phase: the probes'
	// Idempotency-Keys and ids.
	Tag string
}

// Probe is one invocation and the check of its answer.
type Probe struct {
	Name   string
	Event  []byte
	Expect func(payload []byte) error
}

// UnknownPSP is the payment reference the probes ask about: no payment has
// it (pspReferences are 16 characters).
const UnknownPSP = "SMOKETEST0000000"

// Probes returns the probes of a function of kind k. Every probe reaches
// the function's handler: without a canary key, an unauthenticated request
// the function must refuse with 401 yp_1001; with one, a request that runs
// the authentication against the table and the route's own code up to a
// known answer. Only in the test environment does a probe reach the
// upstream (a payment with a test card); in live nothing is charged.
func Probes(k Kind, env Env) ([]Probe, error) {
	c := env.Canary
	if c != nil && (c.APIKey == "" || c.SiteID == "") {
		return nil, fmt.Errorf("smoketest: the canary secret needs apiKey and siteId")
	}
	site := func() string { return "/v1/ecom/" + c.SiteID }
	switch k {
	case KindConfig:
		if c == nil {
			return []Probe{unauthenticated("GET config without a key", http.MethodGet, "/v1/ecom/config", "/v1/ecom/config", env.Tag)}, nil
		}
		want := "test"
		if env.Live {
			want = "live"
		}
		return []Probe{{
			Name:  "GET config with the canary key",
			Event: apiEvent(http.MethodGet, "/v1/ecom/config", "/v1/ecom/config", nil, c.APIKey, "", env.Tag, ""),
			Expect: answer(http.StatusOK, "", func(body map[string]any) error {
				if body["environment"] != want || body["clientToken"] == nil {
					return fmt.Errorf("config %v, want environment %q and a clientToken", body, want)
				}
				return nil
			}),
		}}, nil
	case KindSessions:
		if c == nil {
			return []Probe{unauthenticated("POST sessions without a key", http.MethodPost, "/v1/ecom/{siteId}/sessions", "/v1/ecom/site_smoke/sessions", env.Tag)}, nil
		}
		return []Probe{invalidBody("POST sessions with an empty body (validation, no upstream call)",
			"/v1/ecom/{siteId}/sessions", site()+"/sessions", c, env.Tag, map[string]string{"siteId": c.SiteID})}, nil
	case KindPayments:
		if c == nil {
			return []Probe{unauthenticated("POST payments without a key", http.MethodPost, "/v1/ecom/{siteId}/payments", "/v1/ecom/site_smoke/payments", env.Tag)}, nil
		}
		if env.Live {
			return []Probe{invalidBody("POST payments with an empty body (validation; nothing is charged in live)",
				"/v1/ecom/{siteId}/payments", site()+"/payments", c, env.Tag, map[string]string{"siteId": c.SiteID})}, nil
		}
		return []Probe{{
			Name: "POST payments with a test card (test upstream)",
			Event: apiEvent(http.MethodPost, "/v1/ecom/{siteId}/payments", site()+"/payments",
				map[string]string{"siteId": c.SiteID}, c.APIKey, testPayment(env.Tag), env.Tag, env.Tag),
			Expect: answer(http.StatusOK, "", func(body map[string]any) error {
				if body["resultCode"] != "Authorised" || body["pspReference"] == nil {
					return fmt.Errorf("payment %v, want resultCode Authorised with a pspReference", body)
				}
				return nil
			}),
		}}, nil
	case KindModifications:
		if c == nil {
			return []Probe{unauthenticated("POST captures without a key", http.MethodPost,
				"/v1/ecom/{siteId}/payments/{pspReference}/captures", "/v1/ecom/site_smoke/payments/"+UnknownPSP+"/captures", env.Tag)}, nil
		}
		return []Probe{{
			Name: "POST captures of an unknown payment (404 yp_3006: the record is read, no upstream call)",
			Event: apiEvent(http.MethodPost, "/v1/ecom/{siteId}/payments/{pspReference}/captures", site()+"/payments/"+UnknownPSP+"/captures",
				map[string]string{"siteId": c.SiteID, "pspReference": UnknownPSP}, c.APIKey,
				`{"amount":{"value":100,"currency":"EUR"}}`, env.Tag, env.Tag),
			Expect: answer(http.StatusNotFound, "yp_3006", nil),
		}}, nil
	case KindLookups:
		if c == nil {
			return []Probe{unauthenticated("GET a payment without a key", http.MethodGet,
				"/v1/ecom/{siteId}/payments/{pspReference}", "/v1/ecom/site_smoke/payments/"+UnknownPSP, env.Tag)}, nil
		}
		return []Probe{{
			Name: "GET an unknown payment (404 yp_3006)",
			Event: apiEvent(http.MethodGet, "/v1/ecom/{siteId}/payments/{pspReference}", site()+"/payments/"+UnknownPSP,
				map[string]string{"siteId": c.SiteID, "pspReference": UnknownPSP}, c.APIKey, "", env.Tag, ""),
			Expect: answer(http.StatusNotFound, "yp_3006", nil),
		}}, nil
	case KindWebhooks:
		if c == nil {
			return []Probe{unauthenticated("POST a delivery retry without a key", http.MethodPost,
				"/v1/ecom/webhook-deliveries/{deliveryId}/retry", "/v1/ecom/webhook-deliveries/msg_smoketest/retry", env.Tag)}, nil
		}
		return []Probe{{
			Name: "POST the retry of an unknown delivery (404 yp_3007)",
			Event: apiEvent(http.MethodPost, "/v1/ecom/webhook-deliveries/{deliveryId}/retry", "/v1/ecom/webhook-deliveries/msg_smoketest/retry",
				map[string]string{"deliveryId": "msg_smoketest"}, c.APIKey, "{}", env.Tag, env.Tag),
			Expect: answer(http.StatusNotFound, "yp_3007", nil),
		}}, nil
	case KindNotifications:
		// The platform's credentials are not the smoke test's: an unsigned
		// notification must be refused (basic auth, else the item's HMAC
		// signature checked with the secret's key), and nothing is stored.
		return []Probe{{
			Name: "POST an unsigned notification (refused, nothing stored)",
			Event: apiEvent(http.MethodPost, "/v1/notifications/upstream", "/v1/notifications/upstream", nil, "",
				unsignedNotification, env.Tag, ""),
			Expect: answer(http.StatusUnauthorized, "yp_1001", nil),
		}}, nil
	case KindDispatcher:
		job, _ := json.Marshal(map[string]any{"deliveryId": "msg_" + env.Tag, "attempt": 1})
		return []Probe{{
			Name:   "SQS batch with the job of an unknown delivery (read, dropped)",
			Event:  sqsEvent(env.Tag, string(job)),
			Expect: noBatchFailures,
		}}, nil
	case KindScheduler:
		// A pass is what the schedule runs every minute anyway: the new
		// version reads its indexes (operations in flight, expiry) and
		// answers.
		return []Probe{{Name: "scheduler pass", Event: scheduledEvent, Expect: schedulerPass}}, nil
	}
	return nil, fmt.Errorf("smoketest: unknown kind %q", k)
}

// ParseKinds reads PAYSVC_SMOKE_TARGETS: "kind=functionName" pairs,
// comma-separated.
func ParseKinds(s string) (map[string]Kind, error) {
	out := map[string]Kind{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		k, fn, ok := strings.Cut(item, "=")
		if !ok || fn == "" || !known(Kind(k)) {
			return nil, fmt.Errorf("smoketest: %q is not kind=function (kinds: %s)", item, kindList())
		}
		out[fn] = Kind(k)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("smoketest: no target functions (kind=function pairs)")
	}
	return out, nil
}

func known(k Kind) bool {
	for _, x := range Kinds {
		if x == k {
			return true
		}
	}
	return false
}

func kindList() string {
	var s []string
	for _, k := range Kinds {
		s = append(s, string(k))
	}
	sort.Strings(s)
	return strings.Join(s, ", ")
}

// unsignedNotification is a standard notification with one item and no
// HMAC signature.
const unsignedNotification = `{"live":"false","notificationItems":[{"NotificationRequestItem":{` +
	`"eventCode":"AUTHORISATION","success":"true","pspReference":"` + UnknownPSP + `","merchantAccountCode":"SmokeTest",` +
	`"merchantReference":"smoke-test","amount":{"value":0,"currency":"EUR"},"eventDate":"2026-01-01T00:00:00+00:00"}}]}`

// unauthenticated is a request without Authorization: 401 yp_1001.
func unauthenticated(name, method, resource, path, tag string) Probe {
	body := ""
	if method == http.MethodPost {
		body = "{}"
	}
	return Probe{Name: name, Event: apiEvent(method, resource, path, nil, "", body, tag, ""),
		Expect: answer(http.StatusUnauthorized, "yp_1001", nil)}
}

// invalidBody is an authenticated POST with an empty object: the route's
// validation answers 400 yp_2002 before any upstream call.
func invalidBody(name, resource, path string, c *Canary, tag string, params map[string]string) Probe {
	return Probe{Name: name, Event: apiEvent(http.MethodPost, resource, path, params, c.APIKey, "{}", tag, tag),
		Expect: answer(http.StatusBadRequest, "yp_2002", nil)}
}

// testPayment is a payment with the platform's test card (test environment).
func testPayment(tag string) string {
	ref := tag
	if len(ref) > 80 {
		ref = ref[:80]
	}
	b, _ := json.Marshal(map[string]any{
		"amount":    map[string]any{"value": 100, "currency": "EUR"},
		"reference": ref,
		"returnUrl": "https://example.com/smoke-test",
		"paymentMethod": map[string]any{"type": "scheme", "holderName": "Smoke Test",
			"encryptedCardNumber": "test_4111111111111111", "encryptedExpiryMonth": "test_03",
			"encryptedExpiryYear": "test_2030", "encryptedSecurityCode": "test_737"},
	})
	return string(b)
}

// apiEvent is the API Gateway REST proxy event of a request, as API
// Gateway sends it to the function.
func apiEvent(method, resource, path string, params map[string]string, key, body, requestID, idemKey string) []byte {
	h := map[string]string{"Accept": "application/json", "User-Agent": "paysvc-smoketest"}
	if key != "" {
		h["Authorization"] = "Bearer " + key
	}
	if body != "" {
		h["Content-Type"] = "application/json"
	}
	if idemKey != "" {
		h["Idempotency-Key"] = idemKey
	}
	mv := map[string][]string{}
	for k, v := range h {
		mv[k] = []string{v}
	}
	ev := events.APIGatewayProxyRequest{
		Resource: resource, Path: path, HTTPMethod: method, Headers: h, MultiValueHeaders: mv, PathParameters: params,
		RequestContext: events.APIGatewayProxyRequestContext{
			RequestID: requestID, HTTPMethod: method, ResourcePath: resource, Path: path, Protocol: "HTTP/1.1",
			Identity: events.APIGatewayRequestIdentity{SourceIP: "127.0.0.1", UserAgent: "paysvc-smoketest"},
		},
		Body: body,
	}
	b, _ := json.Marshal(ev)
	return b
}

// sqsEvent is an SQS batch of one message.
func sqsEvent(id, body string) []byte {
	b, _ := json.Marshal(events.SQSEvent{Records: []events.SQSMessage{{
		MessageId: id, ReceiptHandle: "smoketest-" + id, Body: body, EventSource: "aws:sqs",
		Attributes: map[string]string{"ApproximateReceiveCount": "1"},
	}}})
	return b
}

// answer checks a proxy response: its status, the errorCode of its body
// when code is not empty, and then check (when not nil) on its body.
func answer(status int, code string, check func(body map[string]any) error) func([]byte) error {
	return func(payload []byte) error {
		var resp events.APIGatewayProxyResponse
		if err := json.Unmarshal(payload, &resp); err != nil || resp.StatusCode == 0 {
			return fmt.Errorf("not an API Gateway proxy response: %.300s", payload)
		}
		var body map[string]any
		_ = json.Unmarshal([]byte(resp.Body), &body)
		if resp.StatusCode != status || (code != "" && body["errorCode"] != code) {
			want := fmt.Sprint(status)
			if code != "" {
				want += " " + code
			}
			return fmt.Errorf("answered %d: %.300s (want %s)", resp.StatusCode, resp.Body, want)
		}
		if check != nil {
			return check(body)
		}
		return nil
	}
}

// scheduledEvent is the input of the EventBridge Scheduler schedule.
var scheduledEvent = []byte(`{"source":"paysvc.scheduler"}`)

// schedulerPass checks the scheduler function's answer: what its pass did.
func schedulerPass(payload []byte) error {
	var resp map[string]json.RawMessage
	err := json.Unmarshal(payload, &resp)
	keys := []string{"Answered", "Unknown", "Skipped", "NoticesSent", "NoticesDropped"}
	for _, k := range keys {
		var n int
		if err == nil {
			err = json.Unmarshal(resp[k], &n)
		}
	}
	if err != nil || len(resp) != len(keys) {
		return fmt.Errorf("not a scheduler pass: %.300s", payload)
	}
	return nil
}

// noBatchFailures checks an SQS handler's answer: a batch response
// ({"batchItemFailures": …} and nothing else) in which no item failed.
func noBatchFailures(payload []byte) error {
	var resp map[string]json.RawMessage
	err := json.Unmarshal(payload, &resp)
	failures, ok := resp["batchItemFailures"]
	if err != nil || !ok || len(resp) != 1 {
		return fmt.Errorf("not an SQS batch response: %.300s", payload)
	}
	var items []events.SQSBatchItemFailure
	if err := json.Unmarshal(failures, &items); err != nil || len(items) > 0 {
		return fmt.Errorf("batch item failures: %.300s", payload)
	}
	return nil
}
