package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/yp/paysvc/shared/client"
)

// An advanced-flow payment with 3-D Secure: the action goes to the checkout
// component, its details come back, then the payment is captured.
func Example() {
	c, stop := exampleClient() // client.New("http://127.0.0.1:3000", os.Getenv("PAYSVC_KEY"))
	defer stop()
	ctx := context.Background()
	eur := client.Amount{Value: 1000, Currency: "EUR"}

	// The component's paymentMethod state data, passed through, asking for
	// 3-D Secure 2 in the component (native) rather than on a redirect page.
	pay, err := c.CreatePayment(ctx, "site_demo", client.PaymentParams{
		Amount: eur, Reference: "order-ex-1", ReturnURL: "https://shop.example/return",
		PaymentMethod: json.RawMessage(`{"type":"scheme","encryptedCardNumber":"test_4212345678910006",` +
			`"encryptedExpiryMonth":"test_03","encryptedExpiryYear":"test_2030","encryptedSecurityCode":"test_737"}`),
		AuthenticationData: json.RawMessage(`{"threeDSRequestData":{"nativeThreeDS":"preferred"}}`),
	})
	for err == nil && pay.Action != nil {
		fmt.Println(pay.ResultCode, pay.Action.Type, pay.Action.Subtype)
		// Give pay.Action.Raw to the component; it returns the details
		// (here: the shopper passed the challenge).
		pay, err = c.SubmitDetails(ctx, "site_demo", client.DetailsParams{
			Details:     json.RawMessage(`{"threeDSResult":"eyJ0cmFuc1N0YXR1cyI6IlkifQ=="}`),
			PaymentData: pay.Action.PaymentData, Reference: "order-ex-1"})
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(pay.ResultCode)
	if pay.ResultCode == client.ResultAuthorised { // manual capture: capture when you ship
		capt, err := c.Capture(ctx, "site_demo", pay.PSPReference, client.CaptureParams{Amount: eur, Reference: "ship-ex-1"})
		fmt.Println(capt.Status, err)
	}
	// Output:
	// ChallengeShopper threeDS2 challenge
	// Authorised
	// received <nil>
}

// The same Idempotency-Key makes a retry safe: the service answers it with
// the stored answer of the first call, and Meta says so.
func ExampleWithIdempotencyKey() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()
	p := client.SessionParams{Amount: client.Amount{Value: 1000, Currency: "EUR"},
		ReturnURL: "https://shop.example/return", Reference: "order-ex-2"}

	first, err := c.CreateSession(ctx, "site_demo", p, client.WithIdempotencyKey("order-ex-2-session"))
	if err != nil {
		fmt.Println(err)
		return
	}
	again, err := c.CreateSession(ctx, "site_demo", p, client.WithIdempotencyKey("order-ex-2-session"))
	fmt.Println(first.Meta.IdempotencyKey, first.Meta.Replayed)
	fmt.Println(again.Meta.Replayed, again.ID == first.ID, err)

	// The same key with another request is refused.
	p.Amount.Value = 2000
	_, err = c.CreateSession(ctx, "site_demo", p, client.WithIdempotencyKey("order-ex-2-session"))
	fmt.Println(errors.Is(err, client.ErrIdempotencyMismatch))
	// Output:
	// order-ex-2-session false
	// true true <nil>
	// true
}

// Failed calls are *client.Error: match them by class or by code, and read
// the invalid fields.
func ExampleError() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()

	_, err := c.GetPayment(ctx, "site_demo", "NOSUCHPAYMENT")
	fmt.Println(errors.Is(err, client.ErrNotFound), errors.Is(err, client.CodePaymentNotFound))

	_, err = c.CreatePayment(ctx, "site_demo", client.PaymentParams{
		Amount: client.Amount{Value: 1000, Currency: "eur"}, ReturnURL: "https://shop.example/return",
		PaymentMethod: json.RawMessage(`{"type":"scheme","encryptedCardNumber":"test_4111111111111111",` +
			`"encryptedExpiryMonth":"test_03","encryptedExpiryYear":"test_2030","encryptedSecurityCode":"test_737"}`)})
	var apiErr *client.Error
	if errors.As(err, &apiErr) {
		fmt.Println(apiErr.Status, apiErr.Code, errors.Is(err, client.ErrInvalidRequest))
		for _, f := range apiErr.Fields {
			fmt.Println(f.Field)
		}
	}
	// Output:
	// true true
	// 400 yp_2002 true
	// amount.currency
}

// AllEvents pages through the event history as the loop goes on.
func ExampleClient_AllEvents() {
	c, stop := exampleClient()
	defer stop()
	n := 0
	f := client.EventFilter{EventCode: "AUTHORISATION", ListParams: client.ListParams{Limit: 2}}
	for ev, err := range c.AllEvents(context.Background(), f) {
		if err != nil {
			fmt.Println(err)
			break
		}
		fmt.Println(ev.EventCode, ev.PaymentPSPReference != "")
		if n++; n == 3 { // stop whenever you like: no further page is fetched
			break
		}
	}
	// Output:
	// AUTHORISATION true
	// AUTHORISATION true
	// AUTHORISATION true
}

// A webhook endpoint verifies each delivery and decodes it in one step. In
// your handler: client.ConstructEvent(body, r.Header, secret); here at a
// fixed time, with a delivery as paysvc sent it.
func ExampleConstructEvent() {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw5cCuyBpMt2o=" // your subscription's
	body := []byte(hookBody)
	header := http.Header{}
	header.Set("webhook-id", "msg_2bq8z4y7")
	header.Set("webhook-timestamp", "1767225600")
	header.Set("webhook-signature", "v1,1ZGFI9WK7lYANTIyVFMwK4wZiVNkMAyAyL+Umy6O8hY=")
	header.Set("X-Webhook-Delivery-Attempt", "1")
	now := time.Unix(1767225600, 0).Add(30 * time.Second)

	ev, err := client.ConstructEventWithOptions(body, header, client.WebhookOptions{Now: now}, secret)
	fmt.Println(ev.ID, ev.Attempt, ev.Item.EventCode, ev.Item.PSPReference, ev.Item.Success, err)

	_, err = client.ConstructEventWithOptions(append(body, ' '), header, client.WebhookOptions{Now: now}, secret)
	fmt.Println(err)
	_, err = client.ConstructEventWithOptions(body, header, client.WebhookOptions{Now: now.Add(10 * time.Minute)}, secret)
	fmt.Println(err)
	// Output:
	// msg_2bq8z4y7 1 AUTHORISATION QFQTPCQ8HXSKGK82 true <nil>
	// paysvc: no matching v1 webhook signature
	// paysvc: webhook timestamp too old
}
