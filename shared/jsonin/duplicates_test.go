package jsonin

import (
	"strings"
	"testing"

	"github.com/yp/paysvc/shared/apperr"
)

func TestDuplicateKeysRefused(t *testing.T) {
	many := func(dup bool) string {
		var b strings.Builder
		b.WriteString(`{"o":{`)
		for i := 0; i < 40; i++ {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(`"k` + strings.Repeat("x", i) + `":1`)
		}
		if dup {
			b.WriteString(`,"kxxx":2`)
		}
		b.WriteString(`}}`)
		return b.String()
	}
	tests := []struct {
		name, body, field string // field "" = no duplicate
	}{
		{"none", `{"amount":{"value":1,"currency":"EUR"},"lineItems":[{"id":"a"},{"id":"a"}]}`, ""},
		{"same value in sibling objects", `{"a":{"x":1},"b":{"x":1}}`, ""},
		{"top level", `{"amount":{"value":1,"currency":"EUR"},"amount":{"value":99999,"currency":"EUR"}}`, "amount"},
		{"nested", `{"amount":{"value":1,"value":99999,"currency":"EUR"}}`, "amount.value"},
		{"deep", `{"a":{"b":{"c":{"d":1,"d":2}}}}`, "a.b.c.d"},
		{"in array", `{"lineItems":[{"id":"a"},{"id":"b","quantity":1,"quantity":5}]}`, "lineItems[1].quantity"},
		{"array in array", `{"x":[[],[{"k":1,"k":1}]]}`, "x[1][0].k"},
		{"escaped spelling", `{"value":1,"\u0076alue":2}`, "value"},
		{"pass-through object", `{"browserInfo":{"userAgent":"a","userAgent":"b"}}`, "browserInfo.userAgent"},
		{"large object", many(true), "o.kxxx"},
		{"large object without", many(false), ""},
		{"empty containers", `{"a":{},"b":[],"c":[{}],"d":""}`, ""},
		{"spaces", "{ \"a\" : 1 ,\n \"a\" : 2 }", "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var errs Errors
			o := Parse([]byte(tt.body), &errs)
			if tt.field == "" {
				if o == nil {
					t.Fatalf("refused: %v", errs.Err())
				}
				return
			}
			if o != nil {
				t.Fatal("accepted a document with a duplicate key")
			}
			e := apperr.As(errs.Err())
			if e.Kind != apperr.Invalid || len(e.Fields) != 1 || e.Fields[0].Field != tt.field {
				t.Fatalf("error = %+v, want field %q", errs.Err(), tt.field)
			}
		})
	}
}

func BenchmarkDuplicateKey(b *testing.B) {
	body := []byte(`{"amount":{"value":1000,"currency":"EUR"},"reference":"order-1","returnUrl":"https://shop.example/r",` +
		`"paymentMethod":{"type":"scheme","encryptedCardNumber":"test_4111111111111111","encryptedExpiryMonth":"test_03","encryptedExpiryYear":"test_2030","encryptedSecurityCode":"test_737"},` +
		`"browserInfo":{"userAgent":"Mozilla/5.0","acceptHeader":"*/*","language":"en","colorDepth":24,"screenHeight":900,"screenWidth":1440,"timeZoneOffset":0,"javaEnabled":false},` +
		`"lineItems":[{"id":"1","description":"a","quantity":1},{"id":"2","description":"b","quantity":2}]}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, dup := duplicateKey(body); dup {
			b.Fatal("dup")
		}
	}
}
