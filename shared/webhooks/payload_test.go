package webhooks_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/upstream/connector"
	"github.com/yp/paysvc/shared/webhooks"
)

func TestBuildPayload(t *testing.T) {
	item := payments.Notification{
		EventCode: "AUTHORISATION", Success: "true", PSPReference: "QFQTPCQ8HXSKGK82", MerchantReference: "order-1",
		MerchantAccountCode: "DemoShopECOM", Amount: money.Amount{Value: 0, Currency: "EUR"}, PaymentMethod: "visa",
		AdditionalData: map[string]string{
			"hmacSignature": "c2lnbmF0dXJl", "metadata.merchantId": "m_demo", "metadata.siteId": "site_demo",
			"metadata.paymentSource": "sessions", "tokenization.storedPaymentMethodId": "M5N7TQ4TG5PFWR50",
			"recurring.recurringDetailReference": "M5N7TQ4TG5PFWR50", "checkoutSessionId": "CS123",
		},
	}
	orig := len(item.AdditionalData)
	body, err := webhooks.BuildPayload(false, item, "sessions", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(item.AdditionalData) != orig {
		t.Fatal("BuildPayload changed the caller's additionalData")
	}
	var got struct {
		Live  *bool `json:"live"`
		Items []struct {
			Item map[string]any `json:"NotificationRequestItem"`
		} `json:"notificationItems"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	if got.Live == nil || *got.Live || len(got.Items) != 1 {
		t.Fatalf("shape: %s", body)
	}
	it := got.Items[0].Item
	if it["success"] != "true" || it["eventCode"] != "AUTHORISATION" || it["pspReference"] != "QFQTPCQ8HXSKGK82" {
		t.Fatalf("item fields: %v", it)
	}
	ad := it["additionalData"].(map[string]any)
	for _, k := range []string{"hmacSignature", "metadata.merchantId", "metadata.siteId", "metadata.paymentSource"} {
		if _, ok := ad[k]; ok {
			t.Errorf("additionalData still holds %s", k)
		}
	}
	for k, v := range map[string]string{
		"paymentSource": "sessions", "tokenization.storedPaymentMethodId": "M5N7TQ4TG5PFWR50",
		"recurring.recurringDetailReference": "M5N7TQ4TG5PFWR50", "checkoutSessionId": "CS123",
	} {
		if ad[k] != v {
			t.Errorf("additionalData[%s] = %v, want %s", k, ad[k], v)
		}
	}
	again, _ := webhooks.BuildPayload(false, item, "sessions", 0)
	if !bytes.Equal(body, again) {
		t.Fatal("the payload is not deterministic")
	}
	live, _ := webhooks.BuildPayload(true, payments.Notification{EventCode: "CAPTURE"}, "advanced", 0)
	if !bytes.Contains(live, []byte(`"live":true`)) || !bytes.Contains(live, []byte(`"paymentSource":"advanced"`)) {
		t.Fatalf("live payload: %s", live)
	}
}

// TestPayloadItemIsThePlatformsFormat: merchants receive the item in the
// platform's own format, field for field and in its order: the payload's
// item encodes exactly as the platform's wire item with the same fields
// (the additionalData the service keeps aside).
func TestPayloadItemIsThePlatformsFormat(t *testing.T) {
	for _, n := range []payments.Notification{
		{EventCode: "CAPTURE", PSPReference: "MOD1", OriginalReference: "PSP1", Success: "true", EventDate: "2026-05-04T10:00:00+02:00",
			MerchantAccountCode: "AlphaECOM", MerchantReference: "order-1", Amount: money.Amount{Value: 400, Currency: "EUR"},
			PaymentMethod: "visa", Reason: "ok", Operations: []string{"REFUND"}, AdditionalData: map[string]string{"authCode": "1"}},
		{EventCode: "AUTHORISATION", PSPReference: "PSP1", Success: "false"},
	} {
		body, err := webhooks.BuildPayload(false, n, "", 0)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Items []struct {
				Item json.RawMessage `json:"NotificationRequestItem"`
			} `json:"notificationItems"`
		}
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(connector.Item(n))
		if err != nil {
			t.Fatal(err)
		}
		if string(got.Items[0].Item) != string(want) {
			t.Fatalf("payload item\n%s\nwant the platform's encoding\n%s", got.Items[0].Item, want)
		}
	}
}
