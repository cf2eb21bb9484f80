package tests

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/yp/paysvc/shared/admincli"
	"github.com/yp/paysvc/shared/testutil/webhooksink"
	"github.com/yp/paysvc/shared/webhooks"
	"github.com/yp/paysvc/shared/webhooks/verify"
)

// screenshotsEnv names the directory the dashboard test writes its
// screenshots to (docs/images for the documentation); unset, none are taken.
const screenshotsEnv = "PAYSVC_DASHBOARD_SCREENSHOTS"

// The dashboard in a real browser against the local server process: a
// payment appears with its timeline, "Retry now" delivers a pending
// delivery at once, and a notification sent from the dashboard arrives as
// a webhook. With PAYSVC_DASHBOARD_SCREENSHOTS set it writes the
// screenshots of docs/dashboard.md there.
func TestDashboardInBrowser(t *testing.T) {
	data := t.TempDir()
	s := startLocal(t, "PAYSVC_DATA_DIR="+data)
	key := strings.TrimSpace(string(readFile(t, filepath.Join(data, "demo-key.txt"))))
	admin := func(args ...string) string {
		t.Helper()
		var out, errb strings.Builder
		env := map[string]string{"PAYSVC_DATA_DIR": data}
		if code := admincli.Run(context.Background(), args, func(k string) string { return env[k] }, &out, &errb); code != 0 {
			t.Fatalf("paysvc-admin %v: %d %s%s", args, code, out.String(), errb.String())
		}
		return out.String()
	}

	// A subscription, made while the server runs; its first attempt fails.
	sink := webhooksink.New(t, http.StatusServiceUnavailable)
	var sub struct{ Secret string }
	decodeJSON(t, []byte(admin("subscription", "create", "--merchant", "m_demo", "--url", sink.URL, "--allow-insecure-local", "--json")), &sub)
	pay := s.call("POST", "/v1/ecom/site_demo/payments", key, cardBody(2500, "order-dash-1", "https://shop.example/return"), "Idempotency-Key", "order-dash-1")
	var out struct{ PSPReference string }
	if err := json.Unmarshal(pay.body, &out); err != nil || pay.status != 200 || out.PSPReference == "" {
		t.Fatalf("payment: %d %s", pay.status, pay.body)
	}
	psp := out.PSPReference
	sink.NextOf(t, "AUTHORISATION") // attempt 1, answered 503
	s.waitOutput(s.stdout, "the failed attempt recorded", func(logs string) bool { return strings.Contains(logs, `"msg":"webhook attempt failed"`) })

	bctx := newBrowser(t)
	shots := os.Getenv(screenshotsEnv)
	shot := func(name string) chromedp.Action {
		return chromedp.ActionFunc(func(ctx context.Context) error {
			if shots == "" {
				return nil
			}
			var png []byte
			if err := chromedp.FullScreenshot(&png, 100).Do(ctx); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(shots, "dashboard-"+name+".png"), png, 0o644)
		})
	}
	var timeline, msg string
	if err := chromedp.Run(bctx,
		chromedp.EmulateViewport(1400, 900), // the width a laptop shows it at
		chromedp.Navigate(s.base+"/_dashboard/"),
		chromedp.WaitVisible(`a.payment-link[href^="/_dashboard/payments/`+psp+`"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`tr.delivery button.retry`, chromedp.ByQuery),
		shot("overview"),
		chromedp.Click(`a.payment-link[href^="/_dashboard/payments/`+psp+`"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#table-timeline`, chromedp.ByID),
		chromedp.Text(`#table-timeline`, &timeline, chromedp.ByID),
		shot("payment"),
	); err != nil {
		t.Fatalf("browser: %v", err)
	}
	for _, want := range []string{"AUTHORISATION", "notification", "payment", "api", "25.00 EUR"} {
		if !strings.Contains(timeline, want) {
			t.Errorf("the timeline lacks %q:\n%s", want, timeline)
		}
	}

	// Retry now: the pending delivery's next attempt is made at once.
	if err := chromedp.Run(bctx,
		chromedp.Navigate(s.base+"/_dashboard/"),
		chromedp.Click(`tr.delivery button.retry`, chromedp.ByQuery),
		chromedp.WaitVisible(`#msg`, chromedp.ByID),
		chromedp.Text(`#msg`, &msg, chromedp.ByID),
	); err != nil {
		t.Fatalf("browser: %v", err)
	}
	if !strings.Contains(msg, "attempt 2 now") {
		t.Fatalf("retry now said %q", msg)
	}
	again := sink.NextOf(t, "AUTHORISATION")
	if again.Header.Get("X-Webhook-Delivery-Attempt") != "2" {
		t.Fatalf("retried attempt %v", again.Header)
	}

	// A notification from the dashboard: a CAPTURE of the payment, which
	// arrives as a signed webhook.
	if err := chromedp.Run(bctx,
		chromedp.Navigate(s.base+"/_dashboard/payments/"+psp+"?merchant=m_demo"),
		chromedp.SetValue(`#trigger-event`, "CAPTURE", chromedp.ByID),
		chromedp.Click(`#trigger-send`, chromedp.ByID),
		chromedp.WaitVisible(`#msg`, chromedp.ByID),
		chromedp.Text(`#msg`, &msg, chromedp.ByID),
	); err != nil {
		t.Fatalf("browser: %v", err)
	}
	if !strings.Contains(msg, "sent CAPTURE") || !strings.Contains(msg, "[accepted]") {
		t.Fatalf("trigger said %q", msg)
	}
	capture := sink.NextOf(t, "CAPTURE")
	if err := verify.Verify(sub.Secret, capture.Header, capture.Body, time.Now(), 5*time.Minute); err != nil {
		t.Fatalf("the CAPTURE webhook's signature: %v", err)
	}
	if !strings.Contains(string(capture.Body), `"originalReference":"`+psp+`"`) {
		t.Fatalf("the CAPTURE webhook: %s", capture.Body)
	}
	if err := chromedp.Run(bctx,
		chromedp.Navigate(s.base+"/_dashboard/"),
		chromedp.WaitVisible(`#deliveries`, chromedp.ByID),
		shot("deliveries"),
	); err != nil {
		t.Fatalf("browser: %v", err)
	}
	// A delivery's page: the AUTHORISATION's, its two attempts newest
	// first, each with the headers it was sent with (its signature) and
	// the receiver's answer (the 503's body).
	dlID := again.Header.Get(webhooks.HeaderID)
	var status, attempts, history string
	if err := chromedp.Run(bctx,
		chromedp.Click(`tr.delivery a.delivery-link[href^="/_dashboard/deliveries/`+dlID+`"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#delivery-history`, chromedp.ByID),
		chromedp.Text(`#delivery-status`, &status, chromedp.ByID),
		chromedp.Text(`#delivery-attempts`, &attempts, chromedp.ByID),
		chromedp.Text(`#delivery-history`, &history, chromedp.ByID),
		shot("delivery"),
	); err != nil {
		t.Fatalf("browser, a delivery: %v", err)
	}
	if status != "delivered" || attempts != "2" {
		t.Fatalf("the delivery's page: %q, attempts %q", status, attempts)
	}
	second, first := strings.Index(history, "Attempt 2"), strings.Index(history, "Attempt 1")
	for _, want := range []string{"HTTP 204", "HTTP 503", "HTTP 503 Service Unavailable", sink.URL, "X-Webhook-Id", dlID,
		again.Header.Get(webhooks.HeaderSignature), "(no body)"} {
		if !strings.Contains(history, want) {
			t.Errorf("the delivery's attempts lack %q:\n%s", want, history)
		}
	}
	if second < 0 || first < second || !strings.Contains(history[first:], "Service Unavailable") {
		t.Errorf("the attempts, newest first, the first with its answer's body:\n%s", history)
	}

	// A payment's page drives the merchant API, each form with its own
	// Idempotency-Key: a capture, a partial refund, a reversal of the rest,
	// and another payment's cancel;
	// the platform confirms each. Then the overview filters by its state.
	newPayment := func(ref string) string {
		t.Helper()
		r := s.call("POST", "/v1/ecom/site_demo/payments", key, cardBody(3000, ref, "https://shop.example/return"), "Idempotency-Key", ref)
		var out struct{ PSPReference string }
		if err := json.Unmarshal(r.body, &out); err != nil || r.status != 200 || out.PSPReference == "" {
			t.Fatalf("payment: %d %s", r.status, r.body)
		}
		return out.PSPReference
	}
	psp2 := newPayment("order-dash-2")
	page := s.base + "/_dashboard/payments/" + psp2
	act := func(psp, op, amount, code string) {
		t.Helper()
		steps := []chromedp.Action{chromedp.Navigate(s.base + "/_dashboard/payments/" + psp), chromedp.WaitVisible(`#action-`+op+`-send`, chromedp.ByID)}
		if amount != "" {
			steps = append(steps, chromedp.SetValue(`#action-`+op+`-amount`, amount, chromedp.ByID))
		}
		steps = append(steps, chromedp.Click(`#action-`+op+`-send`, chromedp.ByID), chromedp.WaitVisible(`#msg`, chromedp.ByID), chromedp.Text(`#msg`, &msg, chromedp.ByID))
		if err := chromedp.Run(bctx, steps...); err != nil {
			t.Fatalf("browser, %s: %v", op, err)
		}
		if !strings.Contains(msg, "/payments/"+psp+"/"+op+" (Idempotency-Key dashboard-") || !strings.Contains(msg, `"status":"received"`) {
			t.Fatalf("%s said %q", op, msg)
		}
		sink.NextOf(t, code)
	}
	act(psp2, "captures", "", "CAPTURE")
	act(psp2, "refunds", "1000", "REFUND")
	act(psp2, "reversals", "", "REFUND")
	// An uncaptured payment's page cancels its authorisation.
	psp3 := newPayment("order-dash-3")
	act(psp3, "cancels", "", "CANCELLATION")
	var state, rows, picked string
	if err := chromedp.Run(bctx,
		chromedp.Navigate(page),
		chromedp.Text(`#state`, &state, chromedp.ByID),
		shot("payment-actions"),
		chromedp.Navigate(s.base+"/_dashboard/"),
		chromedp.WaitVisible(`#filter-state`, chromedp.ByID),
	); err != nil {
		t.Fatalf("browser: %v", err)
	}
	state = strings.TrimSpace(state)
	if err := chromedp.Run(bctx,
		chromedp.SetValue(`#filter-state`, state, chromedp.ByID),
		chromedp.Value(`#filter-state`, &picked, chromedp.ByID),
	); err != nil || picked != state {
		t.Fatalf("browser, the state filter: %v (picked %q of %q)", err, picked, state)
	}
	if err := chromedp.Run(bctx,
		chromedp.Click(`#filter-apply`, chromedp.ByID),
		chromedp.WaitVisible(`#filter-clear`, chromedp.ByID), // the filtered page
		chromedp.WaitVisible(`a.payment-link[href^="/_dashboard/payments/`+psp2+`"]`, chromedp.ByQuery),
		chromedp.Text(`#payments table`, &rows, chromedp.ByQuery),
		shot("filtered"),
	); err != nil {
		t.Fatalf("browser, filter: %v", err)
	}
	if state == "" || strings.Count(rows, state) != strings.Count(rows, "EUR") {
		t.Fatalf("payments of state %q:\n%s", state, rows)
	}
}
