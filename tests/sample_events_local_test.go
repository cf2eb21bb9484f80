package tests

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/eventreplay"
)

// Every sample event works against the local server (make run) seeded with
// events/seed.json and given the events' notification key, sent with
// cmd/paysvc-event's code, as events/README.md describes: the payment events with the pspReference of a payment made
// first, details after a challenge was started (sent before, it fails, and
// only the file's own key replays that failure); the SQS event is refused
// with the reason.
func TestSampleEventsAgainstLocalServer(t *testing.T) {
	s := startLocal(t, "PAYSVC_DATA_DIR="+t.TempDir(), "PAYSVC_SEED_FILE="+filepath.Join("..", "events", "seed.json"),
		"PAYSVC_UPSTREAM_HMAC_KEY="+sampleHMACKey)
	client := &http.Client{Timeout: 30 * time.Second}
	send := func(file string, o eventreplay.Options) eventreplay.Result {
		t.Helper()
		raw := readFile(t, filepath.Join("..", "events", file))
		o.BaseURL = s.base
		res, err := eventreplay.Send(context.Background(), client, raw, o)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		return res
	}
	wantWith := func(file string, o eventreplay.Options, status int, contains string) map[string]any {
		t.Helper()
		res := send(file, o)
		if res.Status != status || !strings.Contains(string(res.Body), contains) {
			t.Fatalf("%s: %d %s, want %d with %q", file, res.Status, res.Body, status, contains)
		}
		var m map[string]any
		_ = json.Unmarshal(res.Body, &m)
		return m
	}
	want := func(file, psp string, status int, contains string) map[string]any {
		t.Helper()
		return wantWith(file, eventreplay.Options{PSP: psp}, status, contains)
	}
	want("config.json", "", 200, `"clientToken"`)
	want("sessions.json", "", 200, `"sessionData"`)
	want("payment-methods.json", "", 200, `"paymentMethods"`)
	paid := want("payments.json", "", 200, `"resultCode":"Authorised"`)
	psp, _ := paid["pspReference"].(string)
	want("amount-updates.json", psp, 200, `"status":"received"`)
	want("captures.json", psp, 200, `"status":"received"`)
	want("events.json", psp, 200, `"data":`)
	want("reversals.json", psp, 200, `"status":"received"`)
	uncaptured := want("payments.json", "", 200, `"resultCode":"Authorised"`)
	want("cancels.json", uncaptured["pspReference"].(string), 200, `"status":"received"`)

	// details: before a challenge is started it fails, and the platform's
	// 400 is stored under the file's key: sent with that key again it is
	// replayed, and says so.
	want("payments-details.json", "", 400, `"yp_2002"`)
	keep := eventreplay.Options{KeepIdempotencyKey: true}
	wantWith("payments-details.json", keep, 400, `"yp_2002"`)
	if res := send("payments-details.json", keep); !res.Replayed || res.IdempotencyKey != "details-order-1002" {
		t.Fatalf("the file's key sent again: %+v, want a replay", res)
	}
	// After a challenge is started (events/README.md: the challenge-only
	// card, 3-D Secure in the component), the same event file sent again is
	// a new call (a fresh key) and completes it.
	req, _ := http.NewRequest("POST", s.base+"/v1/ecom/site_demo/payments", strings.NewReader(
		`{"amount":{"value":1000,"currency":"EUR"},"reference":"order-3ds","returnUrl":"https://shop.example/return",`+
			`"paymentMethod":{"type":"scheme","encryptedCardNumber":"test_4212345678910006","encryptedExpiryMonth":"test_03",`+
			`"encryptedExpiryYear":"test_2030","encryptedSecurityCode":"test_737"},`+
			`"authenticationData":{"threeDSRequestData":{"nativeThreeDS":"preferred"}}}`))
	req.Header.Set("Authorization", "Bearer yp_test_demoKey000000000000000000000000000000000000")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "order-3ds")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	want("payments-details.json", "", 200, `"resultCode":"Authorised"`)

	want("notification-authorisation.json", "", 200, "[accepted]")
	want("notification-capture.json", "", 200, "[accepted]")
	want("notification-bad-hmac.json", "", 401, `"yp_1001"`)
	// A stored card of shopper guest-7f3a9c is needed to delete one.
	want("stored-payment-methods-delete.json", "", 404, `"yp_3006"`)

	raw := readFile(t, filepath.Join("..", "events", "sqs-deliveries.json"))
	if _, err := eventreplay.Send(context.Background(), client, raw, eventreplay.Options{BaseURL: s.base}); !errors.Is(err, eventreplay.ErrNotAnAPIEvent) {
		t.Fatalf("sqs-deliveries.json: %v, want ErrNotAnAPIEvent", err)
	}
}
