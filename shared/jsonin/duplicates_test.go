package jsonin

import (
	"bytes"
	"fmt"
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
			got := refusal(t, tt.body)
			if (tt.field == "") != (got == nil) || got != nil && (len(got) != 1 || got[0].Field != tt.field) {
				t.Fatalf("refused %+v, want field %q named", got, tt.field)
			}
		})
	}
}

func BenchmarkDuplicateKey(b *testing.B) {
	body := []byte(`{"amount":{"value":1000,"currency":"EUR"},"reference":"order-1","returnUrl":"https://shop.example/r",` +
		`"paymentMethod":{"type":"scheme","encryptedCardNumber":"test_4111111111111111","encryptedExpiryMonth":"test_03","encryptedExpiryYear":"test_2030","encryptedSecurityCode":"test_737"},` +
		`"browserInfo":{"userAgent":"Mozilla/5.0","acceptHeader":"*/*","language":"en","colorDepth":24,"screenHeight":900,"screenWidth":1440,"timeZoneOffset":0,"javaEnabled":false},` +
		`"lineItems":[{"id":"1","description":"a","quantity":1},{"id":"2","description":"b","quantity":2}]}`)
	for _, fold := range []bool{false, true} {
		b.Run(map[bool]string{false: "exact", true: "fold"}[fold], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, found := findClash(body, fold); found {
					b.Fatal("clash")
				}
			}
		})
	}
}

// Names that differ only in letter case, in any object at any depth, are
// refused by Parse with both paths named; DuplicateKey does not count them.
func TestCaseTwinsRefused(t *testing.T) {
	many := func(twin string) string {
		var b strings.Builder
		b.WriteString(`{"o":{`)
		for i := range 40 {
			fmt.Fprintf(&b, `"k%02d":1,`, i)
		}
		b.WriteString(`"` + twin + `":2}}`)
		return b.String()
	}
	tests := []struct {
		name, body    string
		first, second string // "": accepted
	}{
		{"paymentMethod type", `{"paymentMethod":{"type":"x","Type":"scheme"}}`, "paymentMethod.type", "paymentMethod.Type"},
		{"browserInfo userAgent", `{"browserInfo":{"userAgent":"a","UserAgent":"b"}}`, "browserInfo.userAgent", "browserInfo.UserAgent"},
		{"top level", `{"reference":"a","REFERENCE":"b"}`, "reference", "REFERENCE"},
		{"deep in arrays", `{"a":[{},{"b":[{"cD":1,"Cd":2}]}]}`, "a[1].b[0].cD", "a[1].b[0].Cd"},
		{"escaped spelling", `{"x":{"type":1,"\u0054ype":2}}`, "x.type", "x.Type"},
		{"Kelvin sign folds to k", "{\"kind\":1,\"\u212aind\":2}", "kind", "\u212aind"},
		{"long s folds to s", "{\"s\":1,\"\u017f\":2}", "s", "\u017f"},
		{"Greek sigma forms", "{\"\u03c3\":1,\"\u03c2\":2}", "\u03c3", "\u03c2"},
		{"large object", many("K07"), "o.k07", "o.K07"},
		{"large object, no twin", many("k40"), "", ""},
		{"same letters in sibling objects", `{"a":{"type":1},"A2":{"Type":1}}`, "", ""},
		{"different names", `{"type":1,"types":2,"tyqe":3}`, "", ""},
		{"dotless i is not i", "{\"i\":1,\"\u0131\":2}", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if p, dup := DuplicateKey([]byte(tt.body)); dup {
				t.Errorf("DuplicateKey reports %s; case twins are not duplicates", p)
			}
			got := refusal(t, tt.body)
			if (tt.first == "") != (got == nil) ||
				got != nil && (len(got) != 2 || got[0].Field != tt.first || got[1].Field != tt.second || !strings.Contains(got[0].Message, "letter case")) {
				t.Fatalf("refused %+v, want %q and %q named", got, tt.first, tt.second)
			}
		})
	}
}

// foldName is the canonical form of bytes.EqualFold.
func TestFoldNameAgreesWithEqualFold(t *testing.T) {
	names := []string{"type", "Type", "TYPE", "tyPe", "kind", "\u212aind", "Kind", "s", "S", "\u017f", "\u03c3", "\u03c2", "\u03a3",
		"i", "I", "\u0131", "\u0130", "\u00df", "SS", "ss", "\u1e9e", "", "a\u0301", "\u00e1", "\u00c1"}
	for _, a := range names {
		for _, b := range names {
			if got, want := foldName([]byte(a)) == foldName([]byte(b)), bytes.EqualFold([]byte(a), []byte(b)); got != want {
				t.Errorf("%q, %q: foldName equal %v, EqualFold %v", a, b, got, want)
			}
		}
	}
}

// refusal parses body and returns the fields of the 400 refusing it (nil:
// accepted).
func refusal(t *testing.T, body string) []apperr.FieldError {
	t.Helper()
	var errs Errors
	if o := Parse([]byte(body), &errs); o != nil {
		return nil
	}
	e := apperr.As(errs.Err())
	if e.Kind != apperr.Invalid || len(e.Fields) == 0 {
		t.Fatalf("%q: refused with %v, want a 400 naming fields", body, errs.Err())
	}
	return e.Fields
}
