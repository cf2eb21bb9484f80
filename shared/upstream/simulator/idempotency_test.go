package simulator

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/yp/paysvc/shared/upstream"
)

const paymentBody = `{"merchantAccount":"TestMerchantECOM","amount":{"value":1000,"currency":"EUR"},"reference":"r1","returnUrl":"https://shop.example/r","paymentMethod":{"type":"scheme","encryptedCardNumber":"test_4111111111111111","encryptedExpiryMonth":"test_03","encryptedExpiryYear":"test_2030","encryptedSecurityCode":"test_737"}}`

func TestIdempotentReplay(t *testing.T) {
	e := newEnv(t)
	s1, b1, h1 := e.raw(t, "POST", "/v71/payments", testAPIKey, "idem-1", paymentBody)
	s2, b2, h2 := e.raw(t, "POST", "/v71/payments", testAPIKey, "idem-1", paymentBody)
	if s1 != 200 || s2 != 200 || !bytes.Equal(b1, b2) {
		t.Fatalf("replay differs:\n%d %s\n%d %s", s1, b1, s2, b2)
	}
	if h1.Get("Idempotency-Key") != "idem-1" || h2.Get("Idempotency-Key") != "idem-1" {
		t.Fatalf("Idempotency-Key not echoed: %v", h2)
	}
	e.wantPayments(t, 1)
	if n := e.sim.Requests("payments"); n != 2 {
		t.Fatalf("Requests = %d", n)
	}
	// Another key is another payment.
	e.raw(t, "POST", "/v71/payments", testAPIKey, "idem-2", paymentBody)
	// No key: every request is new.
	e.raw(t, "POST", "/v71/payments", testAPIKey, "", paymentBody)
	e.raw(t, "POST", "/v71/payments", testAPIKey, "", paymentBody)
	e.wantPayments(t, 4)
	e.flush(t)
	if n := len(e.rec.items(t)); n != 4 {
		t.Fatalf("notifications = %d, want 4 (none for the replay)", n)
	}
}

func TestIdempotencyReplaysErrorsButNot5xx(t *testing.T) {
	e := newEnv(t)
	bad := strings.Replace(paymentBody, "4111111111111111", "4111111111111112", 1)
	s1, b1, _ := e.raw(t, "POST", "/v71/payments", testAPIKey, "k-422", bad)
	s2, b2, _ := e.raw(t, "POST", "/v71/payments", testAPIKey, "k-422", paymentBody) // corrected, same key: replay (upstream behaviour)
	if s1 != 422 || s2 != 422 || !bytes.Equal(b1, b2) {
		t.Fatalf("4xx not replayed: %d %s / %d %s", s1, b1, s2, b2)
	}
	fail := strings.Replace(paymentBody, "4111111111111111", "4000000000000507", 1)
	if s, _, _ := e.raw(t, "POST", "/v71/payments", testAPIKey, "k-500", fail); s != 500 {
		t.Fatalf("status = %d", s)
	}
	// The key was released: the same key runs again.
	if s, _, _ := e.raw(t, "POST", "/v71/payments", testAPIKey, "k-500", paymentBody); s != 200 {
		t.Fatalf("after 500: status = %d", s)
	}
	e.wantPayments(t, 1)
}

func TestIdempotencyScopedPerAPIKey(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.APIKey = "" }) // accept any key
	e.raw(t, "POST", "/v71/payments", "key-A", "same", paymentBody)
	e.raw(t, "POST", "/v71/payments", "key-B", "same", paymentBody)
	e.raw(t, "POST", "/v71/payments", "key-A", "same", paymentBody)
	e.wantPayments(t, 2)
}

func TestIdempotencyDifferentBody(t *testing.T) {
	other := strings.Replace(paymentBody, `"value":1000`, `"value":999`, 1)
	t.Run("upstream replays", func(t *testing.T) {
		e := newEnv(t)
		_, b1, _ := e.raw(t, "POST", "/v71/payments", testAPIKey, "k", paymentBody)
		s, b2, _ := e.raw(t, "POST", "/v71/payments", testAPIKey, "k", other)
		if s != 200 || !bytes.Equal(b1, b2) {
			t.Fatalf("%d %s", s, b2)
		}
	})
	t.Run("strict rejects", func(t *testing.T) {
		e := newEnv(t, func(o *Options) { o.StrictIdempotency = true })
		e.raw(t, "POST", "/v71/payments", testAPIKey, "k", paymentBody)
		s, b, _ := e.raw(t, "POST", "/v71/payments", testAPIKey, "k", other)
		if s != 422 || !strings.Contains(string(b), "different request") {
			t.Fatalf("%d %s", s, b)
		}
		if s, _, _ := e.raw(t, "POST", "/v71/payments", testAPIKey, "k", paymentBody); s != 200 {
			t.Fatalf("same body after mismatch: %d", s)
		}
	})
}

func TestIdempotencyKeyTooLong(t *testing.T) {
	e := newEnv(t)
	s, b, _ := e.raw(t, "POST", "/v71/payments", testAPIKey, strings.Repeat("k", 65), paymentBody)
	if s != 422 || e.sim.PaymentCount() != 0 {
		t.Fatalf("%d %s", s, b)
	}
}

func TestIdempotencyRetention(t *testing.T) {
	e := newEnv(t)
	e.raw(t, "POST", "/v71/payments", testAPIKey, "old", paymentBody)
	e.clock.Advance(IdempotencyRetention)
	e.raw(t, "POST", "/v71/payments", testAPIKey, "old", paymentBody)
	e.wantPayments(t, 2, "after retention")
}

// A request with the same key while the first is in flight gets 409 "704";
// once the first completes, its answer is replayed: one payment only.
func TestIdempotencyInFlight(t *testing.T) {
	e := newEnv(t)
	hang := paymentReq(1000, cardMethod("4000000000000994", "737", ""))
	var dupErr error
	// The first request is held, its key registered, until its client
	// gives up; a second request with the same key is sent meanwhile.
	firstErr := e.abandonHeld(t, "payments", func(ctx context.Context) error {
		_, err := e.client.Payments(ctx, hang, "k-hang")
		return err
	}, func() {
		_, dupErr = e.client.Payments(context.Background(), hang, "k-hang")
	})
	if !upstream.IsInFlight(dupErr) {
		t.Fatalf("concurrent duplicate: err = %v, want 409 704", dupErr)
	}
	ue := apiErr(t, dupErr)
	if ue.HTTPStatus != 409 || ue.ErrorCode != "704" || ue.Message != "request already processed or in progress" {
		t.Fatalf("error = %+v", ue)
	}
	// The first client gave up; the simulator completes the request.
	if !upstream.IsUnavailable(firstErr) {
		t.Fatalf("first: %v", firstErr)
	}
	e.settled.wait(t, "k-hang", 1)
	r, err := e.client.Payments(context.Background(), hang, "k-hang")
	if err != nil || r.ResultCode != "Authorised" {
		t.Fatalf("after completion: %+v %v", r, err)
	}
	e.wantPayments(t, 1)
}

func TestModificationIdempotency(t *testing.T) {
	e := newEnv(t)
	p := e.pay(t, 1000, "")
	body, _ := json.Marshal(upstream.CaptureRequest{MerchantAccount: testMerchant, Amount: eur(400)})
	_, b1, _ := e.raw(t, "POST", "/v71/payments/"+p.PSPReference+"/captures", testAPIKey, "cap-1", string(body))
	_, b2, _ := e.raw(t, "POST", "/v71/payments/"+p.PSPReference+"/captures", testAPIKey, "cap-1", string(body))
	if !bytes.Equal(b1, b2) {
		t.Fatalf("capture replay differs: %s / %s", b1, b2)
	}
	st, _ := e.sim.Payment(p.PSPReference)
	if st.CapturedValue != 400 || len(st.Modifications) != 1 {
		t.Fatalf("state = %+v", st)
	}
}
