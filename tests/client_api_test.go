package tests

import (
	"context"
	"errors"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/yp/paysvc/shared/client"
	"github.com/yp/paysvc/shared/provision"
	"github.com/yp/paysvc/shared/testenv"
	"github.com/yp/paysvc/shared/upstream/simulator"
)

// envClient is a client of an in-process service; testenv checks every
// exchange against docs/openapi.yaml.
func envClient(t *testing.T, e *testenv.Env, key string) *client.Client {
	srv := httptest.NewServer(e.Handler)
	t.Cleanup(srv.Close)
	return client.New(srv.URL, e.Keys[key], client.WithRetries(0, 0, 0))
}

func TestClientEveryEndpoint(t *testing.T) {
	e := testenv.New(t)
	c := envClient(t, e, "A")
	ctx := context.Background()
	eur := func(v int64) client.Amount { return client.Amount{Value: v, Currency: "EUR"} }

	cfg, err := c.Config(ctx)
	if err != nil || cfg.ClientToken == "" || cfg.Environment != "test" {
		t.Fatalf("config %+v %v", cfg, err)
	}
	ses, err := c.CreateSession(ctx, testenv.SiteA, client.SessionParams{Amount: eur(1000), ReturnURL: "https://shop.example/r", Reference: "order-1"})
	if err != nil || ses.ID == "" || ses.SessionData == "" || ses.Reference != "order-1" {
		t.Fatalf("session %+v %v", ses, err)
	}
	pms, err := c.PaymentMethods(ctx, testenv.SiteA, client.PaymentMethodsParams{Amount: eur(1000), Channel: "Web"})
	if err != nil || len(pms.PaymentMethods) == 0 {
		t.Fatalf("payment methods %+v %v", pms, err)
	}
	// 3-D Secure: a challenge, its details, then Authorised.
	// A pre-authorisation, so that its amount can be updated.
	pay, err := c.CreatePayment(ctx, testenv.SiteA, client.PaymentParams{Amount: eur(1000), PaymentMethod: card("5454545454545454", "737", ""), ReturnURL: "https://shop.example/r", Reference: "order-2",
		AdditionalData: map[string]string{"authorisationType": "PreAuth"}})
	if err != nil || pay.ResultCode != client.ResultChallengeShopper || pay.Action == nil || pay.MerchantReference != "order-2" {
		t.Fatalf("payment %+v %v", pay, err)
	}
	details, err := simulator.DetailsFor(pay.Action.Raw, true)
	if err != nil {
		t.Fatal(err)
	}
	done, err := c.SubmitDetails(ctx, testenv.SiteA, client.DetailsParams{Details: details, Reference: pay.MerchantReference})
	if err != nil || done.ResultCode != client.ResultAuthorised || done.PSPReference == "" {
		t.Fatalf("details %+v %v", done, err)
	}
	psp := done.PSPReference
	upd, err := c.UpdateAmount(ctx, testenv.SiteA, psp, client.AmountUpdateParams{Amount: eur(800)})
	if err != nil || upd.Status != "received" || upd.PaymentPSPReference != psp {
		t.Fatalf("amount update %+v %v", upd, err)
	}
	capt, err := c.Capture(ctx, testenv.SiteA, psp, client.CaptureParams{Amount: eur(500), Reference: "cap-1"})
	if err != nil || capt.Status != "received" || capt.PaymentPSPReference != psp {
		t.Fatalf("capture %+v %v", capt, err)
	}
	rev, err := c.Reverse(ctx, testenv.SiteA, psp, client.ReversalParams{Reference: "rev-1"})
	if err != nil || rev.Status != "received" {
		t.Fatalf("reversal %+v %v", rev, err)
	}

	// Errors are typed: status, code, fields and the request id.
	_, err = c.Capture(ctx, testenv.SiteA, psp, client.CaptureParams{Amount: client.Amount{Value: 1, Currency: "eur"}})
	var apiErr *client.Error
	if !errors.As(err, &apiErr) || apiErr.Status != 400 || apiErr.Code != "yp_2002" || apiErr.RequestID == "" ||
		!slices.ContainsFunc(apiErr.Fields, func(f client.FieldError) bool { return f.Field == "amount.currency" }) {
		t.Fatalf("invalid capture: %#v", err)
	}
	_, err = c.Capture(ctx, testenv.SiteA, "NOSUCHPSP", client.CaptureParams{Amount: eur(1)})
	if !errors.As(err, &apiErr) || apiErr.Status != 404 || apiErr.Code != "yp_3006" {
		t.Fatalf("unknown payment: %v", err)
	}
	_, err = c.DeleteStoredPaymentMethod(ctx, testenv.SiteA, "NOSUCHTOKEN", "shopper-1")
	if !errors.As(err, &apiErr) || apiErr.Code != "yp_3006" {
		t.Fatalf("delete unknown token: %v", err)
	}
	if _, err := client.New(c2url(t, e), "yp_test_nope").Config(ctx); !errors.As(err, &apiErr) || apiErr.Status != 401 {
		t.Fatalf("bad key: %v", err)
	}
}

func c2url(t *testing.T, e *testenv.Env) string {
	srv := httptest.NewServer(e.Handler)
	t.Cleanup(srv.Close)
	return srv.URL
}

// A caller's Idempotency-Key is sent as is: the second call is a replay.
func TestClientCallerIdempotencyKey(t *testing.T) {
	e := testenv.New(t)
	c := envClient(t, e, "A")
	ctx := context.Background()
	p := client.SessionParams{Amount: client.Amount{Value: 100, Currency: "EUR"}, ReturnURL: "https://shop.example/r"}
	a, err := c.CreateSession(ctx, testenv.SiteA, p, client.WithIdempotencyKey("order-77"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.CreateSession(ctx, testenv.SiteA, p, client.WithIdempotencyKey("order-77"))
	if err != nil || a.ID != b.ID {
		t.Fatalf("replay %+v %+v %v", a, b, err)
	}
	if n := len(e.Upstream.Requests("/sessions")); n != 1 {
		t.Fatalf("%d upstream session calls", n)
	}
}

// Refunds, the payment lookup, the event history, deliveries, retry and the
// webhook test, through the typed client against the in-process service
// (every exchange checked against docs/openapi.yaml).
func TestClientRefundsLookupsAndWebhooks(t *testing.T) {
	e := testenv.New(t)
	ctx := context.Background()
	eur := func(v int64) client.Amount { return client.Amount{Value: v, Currency: "EUR"} }
	if _, _, err := (&provision.Provisioner{Store: e.Store, Clock: e.Clock}).PutSubscription(ctx,
		provision.SubscriptionSpec{ID: "sub_a", MerchantID: testenv.MerchantA, URL: "https://a.example/hooks"}); err != nil {
		t.Fatal(err)
	}
	c := envClient(t, e, "A")
	pay, err := c.CreatePayment(ctx, testenv.SiteA, client.PaymentParams{Amount: eur(1000), PaymentMethod: card("4111111111111111", "737", ""), ReturnURL: "https://shop.example/r", Reference: "order-r"})
	if err != nil {
		t.Fatal(err)
	}
	psp := pay.PSPReference
	if _, err := c.Capture(ctx, testenv.SiteA, psp, client.CaptureParams{Amount: eur(1000)}); err != nil {
		t.Fatal(err)
	}
	rf, err := c.Refund(ctx, testenv.SiteA, psp, client.RefundParams{Amount: eur(300), Reference: "rma-1",
		LineItems: []client.LineItem{{ID: "sku-1", Description: "Shoe", Quantity: 1}}})
	if err != nil || rf.Status != "received" || rf.PaymentPSPReference != psp {
		t.Fatalf("refund %+v, %v", rf, err)
	}
	_, err = c.Refund(ctx, testenv.SiteA, psp, client.RefundParams{Amount: eur(701)})
	var apiErr *client.Error
	if !errors.As(err, &apiErr) || apiErr.Status != 400 || apiErr.Code != "yp_2002" {
		t.Fatalf("over-refund: %v", err)
	}
	p, err := c.GetPayment(ctx, testenv.SiteA, psp)
	if err != nil || p.RefundsInFlight.Value != 300 || p.RefundableAmount.Value != 700 || p.PaymentMethod == nil || len(p.Timeline) == 0 {
		t.Fatalf("payment %+v, %v", p, err)
	}
	e.Notify()
	evs, err := c.ListEvents(ctx, client.EventFilter{ListParams: client.ListParams{Limit: 2}, PSPReference: psp})
	if err != nil || len(evs.Data) != 2 || !evs.HasMore || evs.Data[0].EventCode != "REFUND" {
		t.Fatalf("events %+v, %v", evs, err)
	}
	rest, err := c.ListEvents(ctx, client.EventFilter{ListParams: client.ListParams{StartingAfter: evs.Data[1].ID}, PSPReference: psp})
	if err != nil || len(rest.Data) != 1 || rest.Data[0].EventCode != "AUTHORISATION" {
		t.Fatalf("events page 2 %+v, %v", rest, err)
	}
	ds, err := c.ListWebhookDeliveries(ctx, client.DeliveryFilter{Status: "pending"})
	if err != nil || len(ds.Data) != 3 {
		t.Fatalf("deliveries %+v, %v", ds, err)
	}
	_, err = c.RetryWebhookDelivery(ctx, ds.Data[0].ID)
	if !errors.As(err, &apiErr) || apiErr.Status != 400 {
		t.Fatalf("retry of a pending delivery: %v", err)
	}
	if _, err := c.RetryWebhookDelivery(ctx, "msg_nope"); !errors.As(err, &apiErr) || apiErr.Code != "yp_3007" {
		t.Fatalf("retry of an unknown delivery: %v", err)
	}
	rep, err := c.TestWebhooks(ctx, "")
	if err != nil || rep.EventCode != "TEST" || len(rep.Results) != 1 || !rep.Results[0].Delivered {
		t.Fatalf("webhook test %+v, %v", rep, err)
	}
}
