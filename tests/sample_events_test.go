package tests

import (
	"crypto/hmac"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Documented in events/README.md.
const (
	sampleHMACKey = "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056"
	sampleAPIKey  = "yp_test_demoKey000000000000000000000000000000000000"
	sampleSite    = "site_demo"
)

// upstreamHMAC is the upstream's notification signature (docs/webhooks.md),
// written independently of events/generate.py to cross-check it.
func upstreamHMAC(t *testing.T, keyHex string, item map[string]any) string {
	t.Helper()
	str := func(k string) string { s, _ := item[k].(string); return s }
	amount, _ := item["amount"].(map[string]any)
	value := ""
	if v, ok := amount["value"].(float64); ok {
		value = fmt.Sprintf("%d", int64(v))
	}
	currency, _ := amount["currency"].(string)
	signed := strings.Join([]string{
		str("pspReference"), str("originalReference"), str("merchantAccountCode"), str("merchantReference"),
		value, currency, str("eventCode"), str("success"),
	}, ":")
	key, err := hex.DecodeString(keyHex)
	if err != nil {
		t.Fatal(err)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(signed))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

func TestUpstreamHMACTestVector(t *testing.T) {
	item := map[string]any{
		"pspReference": "pspReference", "originalReference": "originalReference",
		"merchantAccountCode": "merchantAccount", "merchantReference": "reference",
		"amount": map[string]any{"value": float64(1000), "currency": "EUR"}, "eventCode": "EVENT", "success": "true",
	}
	got := upstreamHMAC(t, "DFB1EB5485895CFA84146406857104ABB4CBCABDC8AAF103A624C8F6A3EAAB00", item)
	if want := "ipnxGCaUZ4l8TUW75a71/ghd2Fe5ffvX0pV4TLTntIc="; got != want {
		t.Fatalf("HMAC test vector: got %s want %s", got, want)
	}
}

type apiEvent struct {
	Resource          string              `json:"resource"`
	Path              string              `json:"path"`
	HTTPMethod        string              `json:"httpMethod"`
	Headers           map[string]string   `json:"headers"`
	MultiValueHeaders map[string][]string `json:"multiValueHeaders"`
	PathParameters    map[string]string   `json:"pathParameters"`
	QueryParameters   map[string]string   `json:"queryStringParameters"`
	Body              *string             `json:"body"`
	IsBase64Encoded   bool                `json:"isBase64Encoded"`
	RequestContext    struct {
		RequestID    string `json:"requestId"`
		Stage        string `json:"stage"`
		ResourcePath string `json:"resourcePath"`
		HTTPMethod   string `json:"httpMethod"`
		Path         string `json:"path"`
		Identity     struct {
			SourceIP string `json:"sourceIp"`
		} `json:"identity"`
	} `json:"requestContext"`
}

func sampleEventFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot, "events", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range files {
		if filepath.Base(f) != "env.json" {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		t.Fatal("no sample events in events/")
	}
	return out
}

var pathParam = regexp.MustCompile(`\{([^}]+)\}`)

func TestSampleAPIEventsMatchTemplateRoutes(t *testing.T) {
	tpl := loadTemplate(t)
	routes := tpl.apiRoutes(t)
	readme := readFile(t, filepath.Join(repoRoot, "events", "README.md"))
	covered := map[string]bool{}
	for _, file := range sampleEventFiles(t) {
		name := filepath.Base(file)
		if !strings.Contains(string(readme), "`"+name+"`") {
			t.Errorf("events/README.md does not list %s", name)
		}
		raw := readFile(t, file)
		var probe map[string]any
		if err := json.Unmarshal(raw, &probe); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if _, ok := probe["httpMethod"]; !ok {
			continue // not an API Gateway event
		}
		var ev apiEvent
		if err := json.Unmarshal(raw, &ev); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		route := ev.HTTPMethod + " " + ev.Resource
		if len(routes[route]) != 1 {
			t.Errorf("%s: route %s is not a template route", name, route)
		}
		covered[route] = true

		wantPath := pathParam.ReplaceAllStringFunc(ev.Resource, func(p string) string {
			return ev.PathParameters[strings.Trim(p, "{}")]
		})
		rc := ev.RequestContext
		switch {
		case ev.Path != wantPath:
			t.Errorf("%s: path %q does not match resource %q with pathParameters %v", name, ev.Path, ev.Resource, ev.PathParameters)
		case rc.ResourcePath != ev.Resource || rc.HTTPMethod != ev.HTTPMethod:
			t.Errorf("%s: requestContext resourcePath/httpMethod %q %q differ from the event's", name, rc.ResourcePath, rc.HTTPMethod)
		case rc.Stage != "test" || rc.Path != "/test"+ev.Path:
			t.Errorf("%s: requestContext stage %q path %q, want stage test and /test%s", name, rc.Stage, rc.Path, ev.Path)
		case rc.RequestID == "" || rc.Identity.SourceIP == "":
			t.Errorf("%s: requestContext lacks requestId or identity.sourceIp", name)
		}
		if ev.PathParameters["siteId"] != "" && ev.PathParameters["siteId"] != sampleSite {
			t.Errorf("%s: siteId %q, want %s", name, ev.PathParameters["siteId"], sampleSite)
		}
		if strings.HasPrefix(ev.Resource, "/v1/ecom/") && ev.Headers["Authorization"] != "Bearer "+sampleAPIKey {
			t.Errorf("%s: Authorization = %q, want the documented test key", name, ev.Headers["Authorization"])
		}
		if ev.Body != nil {
			if ev.Headers["Content-Type"] != "application/json" {
				t.Errorf("%s: has a body but Content-Type %q", name, ev.Headers["Content-Type"])
			}
			if !json.Valid([]byte(*ev.Body)) || ev.IsBase64Encoded {
				t.Errorf("%s: body is not plain JSON", name)
			}
		}
		for k, v := range ev.Headers {
			if mv := ev.MultiValueHeaders[k]; len(mv) != 1 || mv[0] != v {
				t.Errorf("%s: multiValueHeaders[%s] = %v, headers has %q", name, k, mv, v)
			}
		}
	}
	for route := range wantRoutes {
		if !covered[route] {
			t.Errorf("no sample event for route %s", route)
		}
	}
}

func TestSampleNotificationSignatures(t *testing.T) {
	for _, file := range sampleEventFiles(t) {
		name := filepath.Base(file)
		if !strings.HasPrefix(name, "notification-") {
			continue
		}
		var ev apiEvent
		if err := json.Unmarshal(readFile(t, file), &ev); err != nil || ev.Body == nil {
			t.Fatalf("%s: not an API event with a body (%v)", name, err)
		}
		var body struct {
			Live              string `json:"live"`
			NotificationItems []struct {
				Item map[string]any `json:"NotificationRequestItem"`
			} `json:"notificationItems"`
		}
		if err := json.Unmarshal([]byte(*ev.Body), &body); err != nil {
			t.Fatalf("%s: body: %v", name, err)
		}
		if body.Live != "false" || len(body.NotificationItems) != 1 {
			t.Errorf("%s: want live \"false\" and one item, got %q and %d", name, body.Live, len(body.NotificationItems))
			continue
		}
		item := body.NotificationItems[0].Item
		add, _ := item["additionalData"].(map[string]any)
		sig, _ := add["hmacSignature"].(string)
		valid := sig == upstreamHMAC(t, sampleHMACKey, item)
		if wantValid := !strings.Contains(name, "bad-hmac"); valid != wantValid {
			t.Errorf("%s: signature valid = %v, want %v", name, valid, wantValid)
		}
		if !strings.HasPrefix(ev.Headers["Authorization"], "Basic ") {
			t.Errorf("%s: no basic auth header", name)
		}
	}
}

// TestSampleSQSEvents: the SQS samples are batches as the trigger passes
// them, each body a message of its queue: delivery jobs.
func TestSampleSQSEvents(t *testing.T) {
	for _, tc := range []struct {
		file string
		body func(string) error
	}{
		{"sqs-deliveries.json", func(body string) error {
			var job struct {
				DeliveryID string `json:"deliveryId"`
				Attempt    int    `json:"attempt"`
			}
			if err := json.Unmarshal([]byte(body), &job); err != nil || !strings.HasPrefix(job.DeliveryID, "dlv_") || job.Attempt < 1 {
				return fmt.Errorf("not a delivery job (%v)", err)
			}
			return nil
		}},
	} {
		raw := readFile(t, filepath.Join(repoRoot, "events", tc.file))
		var ev struct {
			Records []struct {
				MessageID      string            `json:"messageId"`
				ReceiptHandle  string            `json:"receiptHandle"`
				Body           string            `json:"body"`
				MD5OfBody      string            `json:"md5OfBody"`
				EventSource    string            `json:"eventSource"`
				EventSourceARN string            `json:"eventSourceARN"`
				Attributes     map[string]string `json:"attributes"`
			} `json:"Records"`
		}
		decodeJSON(t, raw, &ev)
		if n := len(ev.Records); n < 2 || n > 10 {
			t.Fatalf("%s: %d records, want 2..10 (batch size 10)", tc.file, n)
		}
		seen := map[string]bool{}
		for i, r := range ev.Records {
			if r.EventSource != "aws:sqs" || r.MessageID == "" || r.ReceiptHandle == "" || seen[r.MessageID] {
				t.Errorf("%s record %d: bad source/ids: %+v", tc.file, i, r)
			}
			seen[r.MessageID] = true
			if sum := md5.Sum([]byte(r.Body)); hex.EncodeToString(sum[:]) != r.MD5OfBody {
				t.Errorf("%s record %d: md5OfBody does not match the body", tc.file, i)
			}
			if err := tc.body(r.Body); err != nil {
				t.Errorf("%s record %d: body %q: %v", tc.file, i, r.Body, err)
			}
			if r.Attributes["ApproximateReceiveCount"] == "" {
				t.Errorf("%s record %d: no ApproximateReceiveCount", tc.file, i)
			}
		}
	}
}

// sam local only overrides variables a function declares in the template.
func TestEnvJSONMatchesTemplate(t *testing.T) {
	tpl := loadTemplate(t)
	var env map[string]map[string]string
	decodeJSON(t, readFile(t, filepath.Join(repoRoot, "events", "env.json")), &env)
	fns := tpl.functions()
	for scope, vars := range env {
		var targets []cfnResource
		if scope == "Parameters" {
			for _, fn := range fns {
				targets = append(targets, fn)
			}
		} else if fn, ok := fns[scope]; ok {
			targets = []cfnResource{fn}
		} else {
			t.Errorf("env.json: %s is not a function of the template", scope)
			continue
		}
		for k, v := range vars {
			declared := false
			for _, fn := range targets {
				if _, ok := tpl.envVars(fn)[k]; ok {
					declared = true
				}
			}
			if !declared {
				t.Errorf("env.json %s.%s: no function in scope declares it, sam local would ignore it", scope, k)
			}
			if strings.Contains(strings.ToLower(k), "secret") && !strings.HasPrefix(v, "arn:") {
				t.Errorf("env.json %s.%s: secrets are passed as a Secrets Manager ARN, never by value", scope, k)
			}
		}
	}
}
