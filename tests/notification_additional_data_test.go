package tests

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/yp/paysvc/shared/httpapi"
	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/upstream"
)

// A notification whose additionalData holds non-string values (the webhook
// document models "metadata" as an object; numbers and booleans occur too)
// is accepted, not answered 400 — the platform would resend it forever —
// and its object metadata routes the payment like the dotted keys do.
func TestNotificationWithNonStringAdditionalDataAccepted(t *testing.T) {
	e := newWHEnv(t, whOptions{})
	item := upstream.NotificationRequestItem{
		Amount: money.Amount{Value: 1000, Currency: "EUR"}, EventCode: upstream.EventAuthorisation,
		EventDate: "2026-11-23T10:00:00+01:00", MerchantAccountCode: e2eAccount, MerchantReference: "order-objects",
		PSPReference: "OBJECTMETADATA01", Success: "true", PaymentMethod: "visa",
	}
	sig, err := upstream.SignItem(sampleHMACKey, item)
	if err != nil {
		t.Fatal(err)
	}
	body := `{"live":"false","notificationItems":[{"NotificationRequestItem":{
		"additionalData":{"hmacSignature":"` + sig + `","metadata":{"merchantId":"` + e2eMerchant + `","siteId":"` + e2eSite + `","paymentSource":"advanced"},
			"RequestedTestAcquirerResponseCode":1,"threeDAuthenticated":false,"riskdata":{"score":{"total":0}}},
		"amount":{"value":1000,"currency":"EUR"},"eventCode":"AUTHORISATION","eventDate":"2026-11-23T10:00:00+01:00",
		"merchantAccountCode":"` + e2eAccount + `","merchantReference":"order-objects","paymentMethod":"visa",
		"pspReference":"OBJECTMETADATA01","success":"true"}}]}`
	req, _ := http.NewRequest(http.MethodPost, e.base+httpapi.NotificationsPath, strings.NewReader(body))
	req.SetBasicAuth(e2eNotifyUser, e2eNotifyPass)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(raw) != "[accepted]" {
		t.Fatalf("notification: %d %s", resp.StatusCode, raw)
	}
	p := e.payment("OBJECTMETADATA01")
	if p.MerchantID != e2eMerchant || p.SiteID != e2eSite || p.Amount.Value != 1000 {
		t.Fatalf("record %+v", p)
	}
}
