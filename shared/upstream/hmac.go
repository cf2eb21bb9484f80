package upstream

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"slices"
	"strconv"
	"strings"
)

// Notification HMAC (the upstream's documented algorithm):
//
//	signed string = pspReference:originalReference:merchantAccountCode:
//	                merchantReference:value:currency:eventCode:success
//	signature     = base64(HMAC-SHA256(hex-decode(key), signed string))
//
// Missing fields are empty, value is in minor units and success is "true" or
// "false". The eight values are joined as they are: for notification items
// the upstream's own libraries (Go, Node, Java…) do NOT escape ':' or '\'.
// Escaping ('\' → "\\", then ':' → "\:") belongs to the other, key-sorted
// form used for key/value payloads (KeyValueSigningString); it is not applied
// here, or signatures from the upstream would not verify. A consequence is
// that a ':' inside a field can be shifted to a neighbouring field without
// changing the signature; the fields that matter for routing (pspReference,
// eventCode, success, amount) cannot contain ':'.

// Signer signs and verifies notification items with one decoded HMAC key.
// It is safe for concurrent use.
type Signer struct{ key []byte }

// ErrBadHMACKey is returned for an empty or non-hexadecimal HMAC key.
var ErrBadHMACKey = errors.New("upstream: HMAC key must be non-empty hexadecimal")

// NewSigner decodes hexKey (the key as shown by the upstream, hexadecimal).
func NewSigner(hexKey string) (*Signer, error) {
	key, err := hex.DecodeString(hexKey)
	if err != nil || len(key) == 0 {
		return nil, ErrBadHMACKey
	}
	return &Signer{key: key}, nil
}

// SigningString returns the string the upstream signs for item.
func SigningString(item NotificationRequestItem) string {
	var b strings.Builder
	b.Grow(len(item.PSPReference) + len(item.OriginalReference) + len(item.MerchantAccountCode) +
		len(item.MerchantReference) + len(item.Amount.Currency) + len(item.EventCode) + len(item.Success) + 28)
	b.WriteString(item.PSPReference)
	b.WriteByte(':')
	b.WriteString(item.OriginalReference)
	b.WriteByte(':')
	b.WriteString(item.MerchantAccountCode)
	b.WriteByte(':')
	b.WriteString(item.MerchantReference)
	b.WriteByte(':')
	b.WriteString(strconv.FormatInt(item.Amount.Value, 10))
	b.WriteByte(':')
	b.WriteString(item.Amount.Currency)
	b.WriteByte(':')
	b.WriteString(item.EventCode)
	b.WriteByte(':')
	b.WriteString(item.Success)
	return b.String()
}

// Sign returns the base64 HMAC-SHA256 of data.
func (s *Signer) Sign(data string) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(data))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// SignItem returns item's signature (the value for
// additionalData.hmacSignature).
func (s *Signer) SignItem(item NotificationRequestItem) string {
	return s.Sign(SigningString(item))
}

// VerifyItem reports whether item's additionalData.hmacSignature is the
// signature of item, comparing in constant time. A missing signature fails.
func (s *Signer) VerifyItem(item NotificationRequestItem) bool {
	got, err := base64.StdEncoding.DecodeString(item.AdditionalData[KeyHMACSignature])
	if err != nil || len(got) == 0 {
		return false
	}
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(SigningString(item)))
	return hmac.Equal(got, m.Sum(nil))
}

// SignItem returns the signature of item under the hexadecimal key hexKey.
func SignItem(hexKey string, item NotificationRequestItem) (string, error) {
	s, err := NewSigner(hexKey)
	if err != nil {
		return "", err
	}
	return s.SignItem(item), nil
}

// VerifyItem reports whether item carries a valid signature under the
// hexadecimal key hexKey. A bad key or a missing signature fails.
func VerifyItem(hexKey string, item NotificationRequestItem) bool {
	s, err := NewSigner(hexKey)
	if err != nil {
		return false
	}
	return s.VerifyItem(item)
}

// EscapeSigningValue escapes a key or value for the key-sorted signing form:
// '\' becomes "\\" and ':' becomes "\:".
func EscapeSigningValue(v string) string {
	if !strings.ContainsAny(v, `\:`) {
		return v
	}
	return strings.ReplaceAll(strings.ReplaceAll(v, `\`, `\\`), `:`, `\:`)
}

// KeyValueSigningString returns the upstream's key-sorted signing string for
// a flat key/value payload: the escaped keys sorted, then their escaped
// values in the same order, all joined with ':'. It is not used for
// notification items (see SigningString).
func KeyValueSigningString(fields map[string]string) string {
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, 0, 2*len(keys))
	for _, k := range keys {
		parts = append(parts, EscapeSigningValue(k))
	}
	for _, k := range keys {
		parts = append(parts, EscapeSigningValue(fields[k]))
	}
	return strings.Join(parts, ":")
}
