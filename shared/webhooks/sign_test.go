package webhooks_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/yp/paysvc/shared/webhooks"
	"github.com/yp/paysvc/shared/webhooks/sender"
	"github.com/yp/paysvc/shared/webhooks/verify"
)

// Two 32-byte secrets (base64), as tenant.NewWebhookSecret makes them.
const (
	secretOld = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw5cCuyBpMt2o="
	secretNew = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD1bXJ1ISLHbw="
)

func request(t *testing.T, secrets ...string) webhooks.Request {
	t.Helper()
	body := []byte(`{"live":false,"notificationItems":[{"NotificationRequestItem":{"eventCode":"AUTHORISATION","success":"true"}}]}`)
	ts := time.Now().Truncate(time.Second)
	sig, err := webhooks.Sign(secrets, "msg_2kwfyyq3p5g7wejmvv6zmr3mve", ts, body)
	if err != nil {
		t.Fatal(err)
	}
	return webhooks.Request{URL: "https://example.com/hook", ID: "msg_2kwfyyq3p5g7wejmvv6zmr3mve", Attempt: 2, Timestamp: ts, Signature: sig, Body: body}
}

// TestSignaturesVerifyWithStandardWebhooks proves our deliveries verify with
// the official Standard Webhooks Go library, with either secret during a
// rotation, and with our merchant helper.
func TestSignaturesVerifyWithStandardWebhooks(t *testing.T) {
	req := request(t, secretNew, secretOld)
	h := sender.Headers(req)
	if n := len(strings.Fields(h.Get("webhook-signature"))); n != 2 {
		t.Fatalf("rotation: %d signatures, want 2: %q", n, h.Get("webhook-signature"))
	}
	for _, secret := range []string{secretOld, secretNew} {
		wh, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			t.Fatal(err)
		}
		if err := wh.Verify(req.Body, h); err != nil {
			t.Fatalf("standard webhooks library refused our signature with %s…: %v", secret[:10], err)
		}
		if err := verify.Verify(secret, h, req.Body, time.Now(), 0); err != nil {
			t.Fatalf("verify.Verify: %v", err)
		}
		// The library's own signature is what we send.
		want, err := wh.Sign(req.ID, req.Timestamp, req.Body)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(h.Get("webhook-signature"), want) {
			t.Fatalf("library signature %q not among ours %q", want, h.Get("webhook-signature"))
		}
	}
	other, _ := standardwebhooks.NewWebhook("whsec_" + strings.Repeat("A", 43) + "=")
	if err := other.Verify(req.Body, h); err == nil {
		t.Fatal("a wrong secret verified")
	}
	tampered := append([]byte(nil), req.Body...)
	tampered[len(tampered)-3] = 'X'
	wh, _ := standardwebhooks.NewWebhook(secretNew)
	if err := wh.Verify(tampered, h); err == nil {
		t.Fatal("a tampered body verified")
	}
}

func TestHeaders(t *testing.T) {
	req := request(t, secretNew)
	h := sender.Headers(req)
	want := map[string]string{
		"X-Webhook-Id": req.ID, "webhook-timestamp": h.Get("X-Webhook-Timestamp"),
		"X-Webhook-HMAC-Signature": req.Signature, "X-Webhook-Delivery-Attempt": "2",
		"X-Webhook-Payload-Version": "1", "webhook-id": req.ID, "webhook-signature": req.Signature,
		"Content-Type": "application/json",
	}
	for name, v := range want {
		if got := h.Get(name); got != v {
			t.Errorf("%s = %q, want %q", name, got, v)
		}
	}
	if got, want := h.Get("X-Webhook-Timestamp"), strconv.FormatInt(req.Timestamp.Unix(), 10); got != want {
		t.Errorf("timestamp %s, want %s", got, want)
	}
}

func TestSignRefusesBadSecrets(t *testing.T) {
	for _, secrets := range [][]string{nil, {"nope"}, {"whsec_!!!"}, {"whsec_c2hvcnQ="}} {
		if _, err := webhooks.Sign(secrets, "msg_1", time.Now(), []byte("{}")); err == nil {
			t.Errorf("Sign(%q) accepted", secrets)
		}
	}
}

func TestVerifyHelper(t *testing.T) {
	req := request(t, secretNew)
	now := req.Timestamp
	h := sender.Headers(req)
	if err := verify.Verify(secretNew, h, req.Body, now.Add(4*time.Minute), 5*time.Minute); err != nil {
		t.Fatalf("within tolerance: %v", err)
	}
	cases := []struct {
		name   string
		secret string
		hdr    func(http.Header)
		now    time.Time
		want   error
	}{
		{"too old", secretNew, nil, now.Add(6 * time.Minute), verify.ErrTooOld},
		{"too new", secretNew, nil, now.Add(-6 * time.Minute), verify.ErrTooNew},
		{"wrong secret", secretOld, nil, now, verify.ErrNoMatchingSigV1},
		{"bad secret", "whsec_***", nil, now, verify.ErrBadSecret},
		{"missing id", secretNew, func(h http.Header) { h.Del("webhook-id"); h.Del("X-Webhook-Id") }, now, verify.ErrMissingHeaders},
		{"bad timestamp", secretNew, func(h http.Header) { h.Set("webhook-timestamp", "soon") }, now, verify.ErrBadTimestamp},
		{"other version", secretNew, func(h http.Header) {
			h.Set("webhook-signature", strings.Replace(h.Get("webhook-signature"), "v1,", "v2,", 1))
		}, now, verify.ErrNoMatchingSigV1},
		{"X- headers only", secretNew, func(h http.Header) { h.Del("webhook-id"); h.Del("webhook-timestamp"); h.Del("webhook-signature") }, now, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			hh := h.Clone()
			if tc.hdr != nil {
				tc.hdr(hh)
			}
			if err := verify.Verify(tc.secret, hh, req.Body, tc.now, 5*time.Minute); err != tc.want {
				t.Fatalf("Verify: %v, want %v", err, tc.want)
			}
		})
	}
}
