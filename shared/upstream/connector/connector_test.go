package connector_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/upstream"
	"github.com/yp/paysvc/shared/upstream/connector"
)

// recClient records what the connector sends and answers with resp / err.
type recClient struct {
	connector.Client
	err     error
	payment upstream.PaymentRequest
	session upstream.SessionRequest
	capture upstream.CaptureRequest
	refund  upstream.RefundRequest
	keys    []string
	calls   []string
}

func (c *recClient) note(call, key string) {
	c.calls, c.keys = append(c.calls, call), append(c.keys, key)
}

func (c *recClient) Payments(_ context.Context, r upstream.PaymentRequest, key string) (upstream.PaymentResponse, error) {
	c.payment = r
	c.note("payments", key)
	return upstream.PaymentResponse{ResultCode: "IdentifyShopper", Action: json.RawMessage(`{"type":"threeDS2","paymentData":"PD1"}`),
		PaymentMethod: &upstream.PaymentMethodInfo{Type: "scheme", Brand: "visa"}}, c.err
}

func (c *recClient) CreateSession(_ context.Context, r upstream.SessionRequest, key string) (upstream.SessionResponse, error) {
	c.session = r
	c.note("sessions", key)
	return upstream.SessionResponse{ID: "CS1", SessionData: "sd"}, c.err
}

func (c *recClient) Capture(_ context.Context, psp string, r upstream.CaptureRequest, key string) (upstream.ModificationResponse, error) {
	c.capture = r
	c.note("capture "+psp, key)
	return upstream.ModificationResponse{PSPReference: "MOD1", Status: "received", Reference: r.Reference}, c.err
}

func (c *recClient) Refund(_ context.Context, psp string, r upstream.RefundRequest, key string) (upstream.ModificationResponse, error) {
	c.refund = r
	c.note("refund "+psp, key)
	return upstream.ModificationResponse{PSPReference: "MOD2", Status: "received"}, c.err
}

func (c *recClient) Reverse(_ context.Context, psp string, _ upstream.ReversalRequest, key string) (upstream.ModificationResponse, error) {
	c.note("reverse "+psp, key)
	return upstream.ModificationResponse{PSPReference: "MOD3", Status: "received"}, c.err
}

func (c *recClient) Cancel(_ context.Context, psp string, _ upstream.CancelRequest, key string) (upstream.ModificationResponse, error) {
	c.note("cancel "+psp, key)
	return upstream.ModificationResponse{PSPReference: "MOD5", Status: "received"}, c.err
}

func (c *recClient) UpdateAmount(_ context.Context, psp string, _ upstream.AmountUpdateRequest, key string) (upstream.ModificationResponse, error) {
	c.note("amount "+psp, key)
	return upstream.ModificationResponse{PSPReference: "MOD4", Status: "received"}, c.err
}

func (c *recClient) DeleteStoredPaymentMethod(context.Context, upstream.DeleteStoredPaymentMethodRequest) error {
	c.note("delete", "")
	return c.err
}

var eur = money.Amount{Value: 1000, Currency: "EUR"}

// The domain's requests reach the wire as the platform's types: splits
// with their split types and amounts, the idempotency key beside the body,
// the component's state data merged, storePaymentMethod only when asked.
func TestRequestsTranslated(t *testing.T) {
	c := &recClient{}
	k := connector.New(c)
	ctx := context.Background()
	splits := []payments.Split{
		{Account: "BA_m", Value: 970, Currency: "EUR", Reference: "r-merchant"},
		{Kind: payments.SplitCommission, Account: "BA_p", Value: 30, Currency: "EUR", Reference: "r-commission"},
	}
	ans, err := k.Pay(ctx, payments.PaymentRequest{IdempotencyKey: "K1", MerchantAccount: "AlphaECOM", Amount: eur, Splits: splits,
		StateData: map[string]json.RawMessage{"browserInfo": json.RawMessage(`{}`)}})
	if err != nil {
		t.Fatal(err)
	}
	if ans.ActionPaymentData != "PD1" || ans.PaymentMethod != "visa" || ans.ResultCode != "IdentifyShopper" {
		t.Fatalf("answer: %+v", ans)
	}
	wantSplits := []upstream.Split{
		{Type: upstream.SplitBalanceAccount, Account: "BA_m", Amount: &upstream.SplitAmount{Value: 970, Currency: "EUR"}, Reference: "r-merchant"},
		{Type: upstream.SplitCommission, Account: "BA_p", Amount: &upstream.SplitAmount{Value: 30, Currency: "EUR"}, Reference: "r-commission"},
	}
	if !reflect.DeepEqual(c.payment.Splits, wantSplits) || c.payment.Extra["browserInfo"] == nil || c.keys[0] != "K1" {
		t.Fatalf("payment request: %+v, key %q", c.payment, c.keys[0])
	}

	if _, err := k.CreateSession(ctx, payments.SessionRequest{IdempotencyKey: "K2", ShopperName: &payments.Name{FirstName: "A"},
		LineItems: []payments.LineItem{{ID: "1", Quantity: 2}}}); err != nil {
		t.Fatal(err)
	}
	if c.session.StorePaymentMethod != nil || c.session.ShopperName.FirstName != "A" || c.session.LineItems[0].Quantity != 2 {
		t.Fatalf("session request: %+v", c.session)
	}
	if _, err := k.CreateSession(ctx, payments.SessionRequest{StorePaymentMethod: true}); err != nil {
		t.Fatal(err)
	}
	if c.session.StorePaymentMethod == nil || !*c.session.StorePaymentMethod {
		t.Fatal("storePaymentMethod not sent when asked")
	}

	for kind, call := range map[payments.OpKind]string{
		payments.OpCapture: "capture PSP1", payments.OpRefund: "refund PSP1",
		payments.OpReversal: "reverse PSP1", payments.OpAmountUpdate: "amount PSP1", payments.OpCancel: "cancel PSP1",
	} {
		a, err := k.Modify(ctx, payments.ModificationRequest{Kind: kind, IdempotencyKey: "K3", PSPReference: "PSP1", Amount: eur, Splits: splits})
		if err != nil || a.Status != "received" || c.calls[len(c.calls)-1] != call || c.keys[len(c.keys)-1] != "K3" {
			t.Fatalf("%s: %+v %v, calls %v", call, a, err, c.calls)
		}
	}
	if c.capture.Amount != eur || len(c.refund.Splits) != 2 {
		t.Fatalf("capture %+v refund %+v", c.capture, c.refund)
	}
}

// Every payment and session states the merchant's capture mode: manual as
// additionalData.manualCapture "true" (the merchant's own keys kept, its
// map not changed), auto as captureDelayHours 0.
func TestCaptureModeStated(t *testing.T) {
	c := &recClient{}
	k := connector.New(c)
	ctx := context.Background()
	for _, tc := range []struct {
		mode   tenant.CaptureMode
		manual string
		delay  *int
	}{
		{tenant.CaptureManual, "true", nil},
		{tenant.CaptureAuto, "", new(int)},
	} {
		own := map[string]string{"RequestedTestAcquirerResponseCode": "2"}
		if _, err := k.Pay(ctx, payments.PaymentRequest{Amount: eur, CaptureMode: tc.mode, AdditionalData: own}); err != nil {
			t.Fatal(err)
		}
		if _, err := k.CreateSession(ctx, payments.SessionRequest{Amount: eur, CaptureMode: tc.mode}); err != nil {
			t.Fatal(err)
		}
		p, s := c.payment, c.session
		if p.AdditionalData[upstream.AdditionalManualCapture] != tc.manual || s.AdditionalData[upstream.AdditionalManualCapture] != tc.manual ||
			p.AdditionalData["RequestedTestAcquirerResponseCode"] != "2" || len(own) != 1 ||
			!reflect.DeepEqual(p.CaptureDelayHours, tc.delay) || !reflect.DeepEqual(s.CaptureDelayHours, tc.delay) {
			t.Errorf("%s: payment %+v delay %v, session %+v delay %v", tc.mode, p.AdditionalData, p.CaptureDelayHours, s.AdditionalData, s.CaptureDelayHours)
		}
		body, _ := json.Marshal(p)
		if got := bytes.Contains(body, []byte(`"captureDelayHours":0`)); got != (tc.delay != nil) {
			t.Errorf("%s: wire %s", tc.mode, body)
		}
	}
}

// Errors reach the domain classified: in flight, a deterministic
// rejection (with the platform's message; not found named), or no
// definitive answer.
func TestErrorsClassified(t *testing.T) {
	for _, tc := range []struct {
		name               string
		err                error
		inFlight, rejected bool
		notFound           bool
		message            string
	}{
		{"validation", &upstream.Error{HTTPStatus: 422, ErrorCode: "14_030", Message: "Return URL is missing."}, false, true, false, "Return URL is missing."},
		{"unknown stored method", &upstream.Error{HTTPStatus: 422, ErrorCode: upstream.ErrorCodeContractNotFound, Message: "Contract not found"}, false, true, true, "Contract not found"},
		{"in flight", &upstream.Error{HTTPStatus: 409, ErrorCode: upstream.ErrorCodeInFlight}, true, false, false, ""},
		{"our credentials refused", &upstream.Error{HTTPStatus: 401}, false, false, false, ""},
		{"unavailable", &upstream.Error{HTTPStatus: 503}, false, false, false, ""},
		{"timeout", fmt.Errorf("wrapped: %w", upstream.ErrUnavailable), false, false, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := connector.New(&recClient{err: tc.err})
			_, err := k.Modify(context.Background(), payments.ModificationRequest{Kind: payments.OpCapture})
			var rej *payments.UpstreamRejection
			if errors.Is(err, payments.ErrUpstreamInFlight) != tc.inFlight || errors.As(err, &rej) != tc.rejected {
				t.Fatalf("err %v: in flight %v, rejected %v", err, errors.Is(err, payments.ErrUpstreamInFlight), rej != nil)
			}
			if rej != nil && (rej.NotFound != tc.notFound || rej.Message != tc.message) {
				t.Fatalf("rejection %+v", rej)
			}
			if !errors.Is(err, tc.err) {
				t.Fatalf("the client's error is not kept for the logs: %v", err)
			}
		})
	}
}

// A notification item translates to the domain's and back unchanged.
func TestNotificationRoundTrip(t *testing.T) {
	it := upstream.NotificationRequestItem{
		EventCode: "CAPTURE", PSPReference: "MOD1", OriginalReference: "PSP1", Success: "true", EventDate: "2026-05-04T10:00:00+02:00",
		MerchantAccountCode: "AlphaECOM", MerchantReference: "order-1", Amount: eur, PaymentMethod: "visa", Reason: "ok",
		Operations: []string{"REFUND"}, AdditionalData: upstream.AdditionalData{"hmacSignature": "x", "modification.action": "refund"},
	}
	n := connector.Notification(it)
	if !n.Succeeded() || n.AdditionalData["modification.action"] != "refund" || n.OriginalReference != "PSP1" {
		t.Fatalf("domain item: %+v", n)
	}
	if back := connector.Item(n); !reflect.DeepEqual(back, it) {
		t.Fatalf("round trip:\n%+v\n%+v", back, it)
	}
}
