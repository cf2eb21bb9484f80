package client_test

import (
	"context"
	"errors"
	"testing"

	"github.com/yp/paysvc/shared/client"
	"github.com/yp/paysvc/shared/provision"
	"github.com/yp/paysvc/shared/testenv"
)

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
	pay, err := c.CreatePayment(ctx, testenv.SiteA, client.PaymentParams{Amount: eur(1000), PaymentMethod: card("4111111111111111"), ReturnURL: "https://shop.example/r", Reference: "order-r"})
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
