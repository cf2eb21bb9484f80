package tests

import (
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/client"
	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/upstream"
	"github.com/yp/paysvc/shared/webhooks"
	"github.com/yp/paysvc/shared/webhooks/sender"
)

// The client's webhook check (its own module cannot import the service's
// code) against deliveries the service makes: the body BuildPayload
// renders, signed by Sign with the subscription's secrets (two during a
// rotation), with the headers the sender sends. client.ConstructEvent
// accepts exactly those, within the tolerance, and reads every field of
// the item as the service wrote it.
func TestClientWebhooksAgreeWithService(t *testing.T) {
	const (
		oldSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw5cCuyBpMt2o="
		newSecret = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"
	)
	sent := time.Unix(1767225600, 0)
	body, err := webhooks.BuildPayload(false, payments.Notification{
		EventCode: upstream.EventCapture, PSPReference: "CAP0000000000001", OriginalReference: "PSP0000000000001",
		MerchantAccountCode: "DemoShopECOM", MerchantReference: "order-1", Amount: money.Amount{Value: 1000, Currency: "EUR"},
		EventDate: "2026-01-01T00:00:00Z", PaymentMethod: "visa", Reason: "", Success: "true", Operations: []string{"REFUND"},
		AdditionalData: map[string]string{"metadata.merchantId": "m_demo", "hmacSignature": "x", "cardSummary": "1111"},
	}, "advanced", 3)
	if err != nil {
		t.Fatal(err)
	}
	twoItems, _ := json.Marshal(webhooks.Payload{NotificationItems: []webhooks.PayloadItem{{}, {}}})
	delivery := func(b []byte, secrets ...string) http.Header {
		sig, err := webhooks.Sign(secrets, "msg_1", sent, b)
		if err != nil {
			t.Fatal(err)
		}
		return sender.Headers(webhooks.Request{ID: "msg_1", Attempt: 3, Timestamp: sent, Signature: sig, Body: b})
	}
	without := func(h http.Header, names ...string) http.Header {
		h = h.Clone()
		for _, n := range names {
			h.Del(n)
		}
		return h
	}
	for _, tc := range []struct {
		name     string
		body     []byte
		header   http.Header
		receiver []string // the receiver's secrets
		at       time.Time
		want     error // nil: accepted; errAny: refused, no sentinel
	}{
		{"one secret", body, delivery(body, oldSecret), []string{oldSecret}, sent, nil},
		{"rotation, the receiver still has the old secret", body, delivery(body, oldSecret, newSecret), []string{oldSecret}, sent, nil},
		{"rotation, the receiver has the new one", body, delivery(body, oldSecret, newSecret), []string{newSecret}, sent, nil},
		{"the receiver rotates: new and old", body, delivery(body, oldSecret), []string{newSecret, oldSecret}, sent, nil},
		{"X-Webhook-* only", body, without(delivery(body, oldSecret), "webhook-id", "webhook-timestamp", "webhook-signature"), []string{oldSecret}, sent, nil},
		{"Standard Webhooks only", body, without(delivery(body, oldSecret), "X-Webhook-Id", "X-Webhook-Timestamp", "X-Webhook-HMAC-Signature"), []string{oldSecret}, sent, nil},
		{"5 minutes late", body, delivery(body, oldSecret), []string{oldSecret}, sent.Add(5 * time.Minute), nil},
		{"another secret", body, delivery(body, oldSecret), []string{newSecret}, sent, client.ErrWebhookSignature},
		{"another body", append([]byte(" "), body...), delivery(body, oldSecret), []string{oldSecret}, sent, client.ErrWebhookSignature},
		{"6 minutes late", body, delivery(body, oldSecret), []string{oldSecret}, sent.Add(6 * time.Minute), client.ErrWebhookTooOld},
		{"6 minutes early", body, delivery(body, oldSecret), []string{oldSecret}, sent.Add(-6 * time.Minute), client.ErrWebhookTooNew},
		{"unsigned", body, http.Header{}, []string{oldSecret}, sent, client.ErrWebhookHeaders},
		{"signed, but two items", twoItems, delivery(twoItems, oldSecret), []string{oldSecret}, sent, errAny},
		{"signed, but not JSON", []byte("[accepted]"), delivery([]byte("[accepted]"), oldSecret), []string{oldSecret}, sent, errAny},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev, err := client.ConstructEventWithOptions(tc.body, tc.header, client.WebhookOptions{Now: tc.at}, tc.receiver...)
			switch {
			case tc.want == nil && err != nil, tc.want != nil && err == nil:
				t.Fatalf("err %v, want %v", err, tc.want)
			case tc.want != nil && tc.want != errAny && !errors.Is(err, tc.want):
				t.Fatalf("err %v, want %v", err, tc.want)
			case err != nil:
				return
			}
			if ev.ID != "msg_1" || ev.Attempt != 3 || !ev.Timestamp.Equal(sent) || ev.Live {
				t.Fatalf("event %+v", ev)
			}
			// Every field of the item as the service wrote it.
			var wrote webhooks.Payload
			decodeJSON(t, body, &wrote)
			got, _ := json.Marshal(ev.Item)
			want, _ := json.Marshal(wrote.NotificationItems[0].Item)
			var g, w map[string]any
			_ = json.Unmarshal(got, &g)
			_ = json.Unmarshal(want, &w)
			if !reflect.DeepEqual(g, w) {
				t.Fatalf("the client read\n%s\nthe service wrote\n%s", got, want)
			}
		})
	}
}

// errAny: refused, with no particular sentinel.
var errAny = errors.New("any error")
