package upstream

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"testing"
)

// FuzzNotificationVerify parses outside bytes as a notification and checks
// each item's HMAC: parsing never panics; an item verifies exactly when its
// signature is the HMAC of its signing string (computed here independently);
// and a verified item survives a marshal/parse round trip unchanged, so the
// values that were verified are the values the service acts on.
func FuzzNotificationVerify(f *testing.F) {
	const key = "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056"
	signer, err := NewSigner(key)
	if err != nil {
		f.Fatal(err)
	}
	item := NotificationRequestItem{EventCode: "AUTHORISATION", PSPReference: "7914073381342284", Success: "true",
		MerchantAccountCode: "TestMerchant", MerchantReference: "TestPayment-1407325143704"}
	item.Amount.Value, item.Amount.Currency = 1130, "EUR"
	item.AdditionalData = map[string]string{KeyHMACSignature: signer.SignItem(item), "metadata.merchantId": "m_a"}
	good, _ := json.Marshal(Notification{Live: "false", NotificationItems: []NotificationItem{{Item: item}}})
	f.Add(good)
	f.Add([]byte(`{"live":"false","notificationItems":[{"NotificationRequestItem":{"additionalData":{"hmacSignature":"x","obj":{"a":1}},"amount":{"value":1,"currency":"EUR"}}}]}`))
	f.Add([]byte(`{"notificationItems":[{"NotificationRequestItem":{"additionalData":{"n":1,"b":true,"arr":[1,"a"],"nil":null}}}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var n Notification
		if json.Unmarshal(body, &n) != nil {
			return
		}
		for _, ni := range n.NotificationItems {
			it := ni.Item
			m := hmac.New(sha256.New, signer.key)
			m.Write([]byte(SigningString(it)))
			want := base64.StdEncoding.EncodeToString(m.Sum(nil))
			// A signature must be base64 and nothing more: DecodeString
			// returns what it decoded before trailing garbage ("…=0") too.
			got, decErr := base64.StdEncoding.DecodeString(it.AdditionalData[KeyHMACSignature])
			wantOK := decErr == nil && len(got) > 0 && hmac.Equal(got, m.Sum(nil))
			if ok := signer.VerifyItem(it); ok != wantOK {
				t.Fatalf("VerifyItem = %v, independent check %v (%s)", ok, wantOK, want)
			}
			if !wantOK {
				continue
			}
			raw, err := json.Marshal(Notification{NotificationItems: []NotificationItem{{Item: it}}})
			if err != nil {
				t.Fatal(err)
			}
			var again Notification
			if err := json.Unmarshal(raw, &again); err != nil || len(again.NotificationItems) != 1 ||
				SigningString(again.NotificationItems[0].Item) != SigningString(it) || !signer.VerifyItem(again.NotificationItems[0].Item) {
				t.Fatalf("a verified item changed in a round trip: %s", raw)
			}
		}
	})
}
