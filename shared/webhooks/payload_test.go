package webhooks_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/upstream"
	"github.com/yp/paysvc/shared/webhooks"
)

func TestBuildPayload(t *testing.T) {
	item := upstream.NotificationRequestItem{
		EventCode: "AUTHORISATION", Success: "true", PSPReference: "QFQTPCQ8HXSKGK82", MerchantReference: "order-1",
		MerchantAccountCode: "DemoShopECOM", Amount: money.Amount{Value: 0, Currency: "EUR"}, PaymentMethod: "visa",
		AdditionalData: map[string]string{
			"hmacSignature": "c2lnbmF0dXJl", "metadata.merchantId": "m_demo", "metadata.siteId": "site_demo",
			"metadata.paymentSource": "sessions", "tokenization.storedPaymentMethodId": "M5N7TQ4TG5PFWR50",
			"recurring.recurringDetailReference": "M5N7TQ4TG5PFWR50", "checkoutSessionId": "CS123",
		},
	}
	orig := len(item.AdditionalData)
	body, err := webhooks.BuildPayload(false, item, "sessions")
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
	again, _ := webhooks.BuildPayload(false, item, "sessions")
	if !bytes.Equal(body, again) {
		t.Fatal("the payload is not deterministic")
	}
	live, _ := webhooks.BuildPayload(true, upstream.NotificationRequestItem{EventCode: "CAPTURE"}, "advanced")
	if !bytes.Contains(live, []byte(`"live":true`)) || !bytes.Contains(live, []byte(`"paymentSource":"advanced"`)) {
		t.Fatalf("live payload: %s", live)
	}
}
