package upstream

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"testing"

	"github.com/yp/paysvc/shared/money"
)

// Test vector of docs/webhooks.md (also the upstream libraries' own vector).
const (
	vectorKey  = "DFB1EB5485895CFA84146406857104ABB4CBCABDC8AAF103A624C8F6A3EAAB00"
	vectorData = "pspReference:originalReference:merchantAccount:reference:1000:EUR:EVENT:true"
	vectorSig  = "ipnxGCaUZ4l8TUW75a71/ghd2Fe5ffvX0pV4TLTntIc="
)

func vectorItem() NotificationRequestItem {
	return NotificationRequestItem{
		PSPReference:        "pspReference",
		OriginalReference:   "originalReference",
		MerchantAccountCode: "merchantAccount",
		MerchantReference:   "reference",
		Amount:              money.Amount{Value: 1000, Currency: "EUR"},
		EventCode:           "EVENT",
		Success:             "true",
		EventDate:           "1970-01-01T00:00:00+00:00",
		PaymentMethod:       "VISA",
		Reason:              "reason",
	}
}

func signed(t *testing.T, item NotificationRequestItem, key string) NotificationRequestItem {
	t.Helper()
	sig, err := SignItem(key, item)
	if err != nil {
		t.Fatal(err)
	}
	ad := map[string]string{}
	for k, v := range item.AdditionalData {
		ad[k] = v
	}
	ad[KeyHMACSignature] = sig
	item.AdditionalData = ad
	return item
}

// independentSig computes the HMAC with nothing but the standard library.
func independentSig(t *testing.T, hexKey, data string) string {
	t.Helper()
	key, err := hex.DecodeString(hexKey)
	if err != nil {
		t.Fatal(err)
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

func TestHMACVector(t *testing.T) {
	item := vectorItem()
	if got := SigningString(item); got != vectorData {
		t.Fatalf("SigningString = %q, want %q", got, vectorData)
	}
	sig, err := SignItem(vectorKey, item)
	if err != nil {
		t.Fatal(err)
	}
	if sig != vectorSig {
		t.Fatalf("SignItem = %q, want %q", sig, vectorSig)
	}
	item.AdditionalData = map[string]string{KeyHMACSignature: vectorSig}
	if !VerifyItem(vectorKey, item) {
		t.Fatal("VerifyItem(vector) = false")
	}
	// Lower-case hex is the same key.
	lower, _ := hex.DecodeString(vectorKey)
	if !VerifyItem(hex.EncodeToString(lower), item) {
		t.Fatal("VerifyItem with lower-case key = false")
	}
}

func TestHMACMissingFieldsAreEmpty(t *testing.T) {
	item := NotificationRequestItem{PSPReference: "P", MerchantAccountCode: "M", Amount: money.Amount{Value: 0, Currency: "EUR"}, EventCode: "AUTHORISATION", Success: "false"}
	if got, want := SigningString(item), "P::M::0:EUR:AUTHORISATION:false"; got != want {
		t.Fatalf("SigningString = %q, want %q", got, want)
	}
}

func TestHMACTamperedFields(t *testing.T) {
	good := signed(t, vectorItem(), vectorKey)
	if !VerifyItem(vectorKey, good) {
		t.Fatal("signed item does not verify")
	}
	tamper := map[string]func(*NotificationRequestItem){
		"pspReference":        func(i *NotificationRequestItem) { i.PSPReference = "other" },
		"originalReference":   func(i *NotificationRequestItem) { i.OriginalReference = "" },
		"merchantAccountCode": func(i *NotificationRequestItem) { i.MerchantAccountCode = "merchantAccount2" },
		"merchantReference":   func(i *NotificationRequestItem) { i.MerchantReference = "ref" },
		"value":               func(i *NotificationRequestItem) { i.Amount.Value = 1001 },
		"currency":            func(i *NotificationRequestItem) { i.Amount.Currency = "USD" },
		"eventCode":           func(i *NotificationRequestItem) { i.EventCode = "CAPTURE" },
		"success":             func(i *NotificationRequestItem) { i.Success = "false" },
		"signature": func(i *NotificationRequestItem) {
			i.AdditionalData = map[string]string{KeyHMACSignature: "AAAA" + vectorSig[4:]}
		},
		"missing signature": func(i *NotificationRequestItem) { i.AdditionalData = nil },
		"signature not b64": func(i *NotificationRequestItem) { i.AdditionalData = map[string]string{KeyHMACSignature: "%%%"} },
		"truncated signature": func(i *NotificationRequestItem) {
			i.AdditionalData = map[string]string{KeyHMACSignature: vectorSig[:20]}
		},
	}
	for name, f := range tamper {
		t.Run(name, func(t *testing.T) {
			item := good
			item.AdditionalData = map[string]string{KeyHMACSignature: good.AdditionalData[KeyHMACSignature]}
			f(&item)
			if VerifyItem(vectorKey, item) {
				t.Fatalf("tampered %s still verifies", name)
			}
		})
	}
	// Fields outside the signed string may change.
	item := good
	item.Reason, item.EventDate, item.PaymentMethod = "x", "y", "z"
	if !VerifyItem(vectorKey, item) {
		t.Fatal("unsigned fields changed the verification")
	}
}

func TestHMACKeys(t *testing.T) {
	good := signed(t, vectorItem(), vectorKey)
	otherKey := "00B1EB5485895CFA84146406857104ABB4CBCABDC8AAF103A624C8F6A3EAAB00"
	if VerifyItem(otherKey, good) {
		t.Fatal("verifies under the wrong key")
	}
	for _, bad := range []string{"", "XYZ", "ABC", vectorKey + "0"} {
		if _, err := SignItem(bad, vectorItem()); err == nil {
			t.Errorf("SignItem(%q) accepted a bad key", bad)
		}
		if VerifyItem(bad, good) {
			t.Errorf("VerifyItem(%q) = true for a bad key", bad)
		}
		if _, err := NewSigner(bad); err != ErrBadHMACKey {
			t.Errorf("NewSigner(%q) err = %v", bad, err)
		}
	}
}

// Notification items are signed unescaped, like the upstream's libraries do.
func TestHMACSpecialCharactersAreNotEscapedInItems(t *testing.T) {
	item := vectorItem()
	item.MerchantReference = `order:42\a`
	item.OriginalReference = `x\:y`
	wantData := `pspReference:x\:y:merchantAccount:order:42\a:1000:EUR:EVENT:true`
	if got := SigningString(item); got != wantData {
		t.Fatalf("SigningString = %q, want %q", got, wantData)
	}
	sig, err := SignItem(vectorKey, item)
	if err != nil {
		t.Fatal(err)
	}
	if want := independentSig(t, vectorKey, wantData); sig != want {
		t.Fatalf("SignItem = %q, want %q", sig, want)
	}
	escaped := independentSig(t, vectorKey, `pspReference:x\\\:y:merchantAccount:order\:42\\a:1000:EUR:EVENT:true`)
	if sig == escaped {
		t.Fatal("item signature used the escaped form")
	}
	item.AdditionalData = map[string]string{KeyHMACSignature: sig}
	if !VerifyItem(vectorKey, item) {
		t.Fatal("item with ':' and '\\' does not verify")
	}
	// Documented property of the unescaped format: a ':' can move between
	// adjacent fields without changing the signed string.
	shifted := item
	shifted.OriginalReference = `x\`
	shifted.MerchantAccountCode = `y:merchantAccount`
	if SigningString(shifted) != SigningString(item) {
		t.Fatal("expected the shifted item to have the same signing string")
	}
}

// The key-sorted form escapes '\' and ':' (vectors of the upstream's libraries).
func TestKeyValueSigningEscapes(t *testing.T) {
	got := KeyValueSigningString(map[string]string{
		"CurrencyCode":    "EUR",
		"MerchantAccount": `ACC:\`,
		"SessionValidity": "2019-09-21T11:45:24.637Z",
	})
	want := `CurrencyCode:MerchantAccount:SessionValidity:EUR:ACC\:\\:2019-09-21T11\:45\:24.637Z`
	if got != want {
		t.Fatalf("KeyValueSigningString = %q, want %q", got, want)
	}
	s, err := NewSigner(vectorKey)
	if err != nil {
		t.Fatal(err)
	}
	data := `countryCode:currencyCode:merchantAccount:merchantReference:paymentAmount:sessionValidity:skinCode:NL:EUR:MagentoMerchantTest2:TEST-PAYMENT-2017-02-01-14\:02\:05:199:2017-02-02T14\:02\:05+01\:00:PKz2KML1`
	if got, want := s.Sign(data), "34oR8T1whkQWTv9P+SzKyp8zhusf9n0dpqrm9nsqSJs="; got != want {
		t.Fatalf("Sign = %q, want %q", got, want)
	}
	for in, want := range map[string]string{"a": "a", `a\b`: `a\\b`, "a:b": `a\:b`, `\:`: `\\\:`} {
		if got := EscapeSigningValue(in); got != want {
			t.Errorf("EscapeSigningValue(%q) = %q, want %q", in, got, want)
		}
	}
}

func BenchmarkVerifyItem(b *testing.B) {
	s, _ := NewSigner(vectorKey)
	item := vectorItem()
	item.AdditionalData = map[string]string{KeyHMACSignature: vectorSig}
	for b.Loop() {
		if !s.VerifyItem(item) {
			b.Fatal("no")
		}
	}
}
