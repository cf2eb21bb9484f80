// Package bodies holds typical request bodies, shared by the tests'
// benchmarks (shared/testenv) and the bench command.
package bodies

import "fmt"

// Typical request bodies shared by the benchmarks and the bench command:
// a Drop-in payment with its state data (about 1.2 KB) and a sessions
// request with line items. %s is the reference.
const (
	PaymentBodyFmt = `{"amount":{"value":12950,"currency":"EUR"},"reference":"%s",
"returnUrl":"https://shop.example/checkout/return?order=000123",
"paymentMethod":{"type":"scheme","holderName":"J. Smith","encryptedCardNumber":"test_4111111111111111",
"encryptedExpiryMonth":"test_03","encryptedExpiryYear":"test_2030","encryptedSecurityCode":"test_737","brand":"visa"},
"browserInfo":{"acceptHeader":"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8","colorDepth":24,
"language":"nl-NL","javaEnabled":false,"screenHeight":1080,"screenWidth":1920,
"userAgent":"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36",
"timeZoneOffset":-60},"origin":"https://shop.example","channel":"Web","shopperEmail":"j.smith@example.com",
"shopperIP":"192.0.2.10","shopperLocale":"nl-NL","billingAddress":{"street":"Simon Carmiggeltstraat",
"houseNumberOrName":"6-50","postalCode":"1011DJ","city":"Amsterdam","country":"NL"}}`
	SessionBodyFmt = `{"amount":{"value":12950,"currency":"EUR"},"reference":"%s",
"returnUrl":"https://shop.example/checkout/return?order=000124","shopperEmail":"j.smith@example.com",
"shopperLocale":"nl-NL","shopperReference":"shopper-000042","lineItems":[
{"id":"sku-1","description":"Trail running shoes","quantity":1,"amountIncludingTax":9950},
{"id":"sku-2","description":"Merino socks (3 pairs)","quantity":1,"amountIncludingTax":3000}]}`
)

// PaymentBody returns PaymentBodyFmt with reference ref.
func PaymentBody(ref string) string { return fmt.Sprintf(PaymentBodyFmt, ref) }

// SessionBody returns SessionBodyFmt with reference ref.
func SessionBody(ref string) string { return fmt.Sprintf(SessionBodyFmt, ref) }
