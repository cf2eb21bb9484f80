package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/yp/paysvc/docs"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/client"
)

// A merchant integration with the Go client against the local server
// process: session, a 3-D Secure payment completed with its details, a
// capture, and the AUTHORISATION and CAPTURE webhooks received, verified
// and decoded with client.ConstructEvent. Every exchange is checked against docs/openapi.yaml.
func TestClientE2ELocalServer(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	events := make(chan client.WebhookItem, 20)
	checker := repoChecker(t)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err != nil {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		if v := checker.CheckWebhook("paymentEvent", r.Header, body); len(v) > 0 {
			t.Errorf("webhook violates docs/openapi.yaml: %v", v)
		}
		ev, err := client.ConstructEvent(body, r.Header, secret)
		if err != nil || ev.ID == "" || ev.Attempt < 1 {
			t.Errorf("webhook %+v: %v", ev, err)
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		events <- ev.Item
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()

	s := startLocal(t, "PAYSVC_DATA_DIR="+t.TempDir(), "PAYSVC_SEED_FILE="+hookedSeed(t, receiver.URL+"/hooks"), "PAYSVC_WEBHOOK_ALLOW_LOCAL=true")

	// The served contract is the repository's.
	// (a local-server convenience, not part of the API it describes).
	resp, err := http.Get(s.base + "/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	served, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Equal(served, docs.OpenAPI) {
		t.Fatalf("GET /openapi.yaml: %d, %d bytes", resp.StatusCode, len(served))
	}
	// The banner reaches us through a pipe copied by another goroutine
	// (not the logs', which said the server is ready): wait for it.
	s.waitOutput(s.stderr, "the banner saying where the contract is served", func(banner string) bool {
		return strings.Contains(banner, "/openapi.yaml")
	})

	c := client.New(s.base, seedKey, client.WithHTTPClient(&http.Client{Transport: checker.Transport(t, nil), Timeout: 30 * time.Second}))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	eur := client.Amount{Value: 4200, Currency: "EUR"}

	ses, err := c.CreateSession(ctx, "site_acme_web", client.SessionParams{Amount: eur, ReturnURL: "https://acme.example/return", Reference: "order-c1"})
	if err != nil || ses.ID == "" {
		t.Fatalf("session %+v: %v", ses, err)
	}
	pay, err := c.CreatePayment(ctx, "site_acme_web", client.PaymentParams{
		Amount: eur, Reference: "order-c2", ReturnURL: "https://acme.example/return",
		PaymentMethod: json.RawMessage(`{"type":"scheme","encryptedCardNumber":"test_5454545454545454","encryptedExpiryMonth":"test_03","encryptedExpiryYear":"test_2030","encryptedSecurityCode":"test_737"}`),
	})
	// As the platform answers (make run's simulator is platform-like): the
	// 3-D Secure page as a redirect action, no pspReference yet.
	if err != nil || pay.ResultCode != client.ResultRedirectShopper || pay.Action == nil || pay.PSPReference != "" {
		t.Fatalf("payment %+v: %v", pay, err)
	}
	// As the README's integration: every action goes to the component, its
	// details come back with the payment's reference (3-D Secure 2 may ask
	// for a fingerprint, then a challenge).
	done := pay
	for i := 0; done.Action != nil && i < 3; i++ {
		details := detailsFor(t, done.Action.Raw, true) // what the shopper's component sends back
		done, err = c.SubmitDetails(ctx, "site_acme_web", client.DetailsParams{Details: details, Reference: pay.MerchantReference})
		if err != nil {
			t.Fatalf("details: %v", err)
		}
	}
	if done.ResultCode != client.ResultAuthorised {
		t.Fatalf("details %+v", done)
	}
	capt, err := c.Capture(ctx, "site_acme_web", done.PSPReference, client.CaptureParams{Amount: eur, Reference: "cap-c2"})
	if err != nil || capt.Status != "received" {
		t.Fatalf("capture %+v: %v", capt, err)
	}

	want := map[string]bool{"AUTHORISATION": false, "CAPTURE": false}
	deadline := time.After(serverWait) // a failure bound only
	for !want["AUTHORISATION"] || !want["CAPTURE"] {
		select {
		case ev := <-events:
			psp := ev.PSPReference
			if ev.EventCode == "CAPTURE" {
				psp = ev.OriginalReference
			}
			if _, ok := want[ev.EventCode]; ok && psp == done.PSPReference {
				if ev.Success != "true" {
					t.Fatalf("%s not successful: %+v", ev.EventCode, ev)
				}
				want[ev.EventCode] = true
			}
		case <-deadline:
			t.Fatalf("webhooks received %v within %s\n%s", want, serverWait, s.outText())
		}
	}
}
