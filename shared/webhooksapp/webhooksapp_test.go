package webhooksapp

import (
	"encoding/json"
	"testing"
	"unicode"

	"github.com/yp/paysvc/shared/apperr"
)

func TestDecode(t *testing.T) {
	for body, field := range map[string]string{"": "", "{}": "", `{"now":true}`: "now", "[]": "-"} {
		err := DecodeRetry([]byte(body))
		if (field == "") != (err == nil) || (err != nil && apperr.KindOf(err) != apperr.Invalid) {
			t.Errorf("retry %q: %v", body, err)
		}
	}
	for body, want := range map[string]string{"": "", "{}": "", `{"subscriptionId":"sub_1"}`: "sub_1"} {
		if got, err := DecodeTest([]byte(body)); err != nil || got != want {
			t.Errorf("test %q: %q, %v", body, got, err)
		}
	}
	for _, body := range []string{`{"subscriptionId":""}`, `{"subscriptionId":1}`, `{"url":"x"}`, `{"subscriptionId":"a","subscriptionId":"b"}`} {
		if _, err := DecodeTest([]byte(body)); apperr.KindOf(err) != apperr.Invalid {
			t.Errorf("test %q: %v, want 400", body, err)
		}
	}
	// subscriptionId is an identifier (jsonin.Identifier); names that
	// differ only in letter case are refused in every body.
	for body, field := range map[string]string{
		`{"subscriptionId":"sub_\u202e1"}`:                 "subscriptionId",
		`{"subscriptionId":"sub_\u200b1"}`:                 "subscriptionId",
		`{"subscriptionId":"sub_\ud800"}`:                  "subscriptionId",
		`{"subscriptionId":"sub_1","SubscriptionId":"s2"}`: "SubscriptionId",
	} {
		_, err := DecodeTest([]byte(body))
		if e := apperr.As(err); e.Kind != apperr.Invalid || e.Fields[len(e.Fields)-1].Field != field {
			t.Errorf("test %q: %v, want a 400 naming %s", body, err, field)
		}
	}
}

// A refused body is always a 400; an accepted one is valid JSON (or empty).
func FuzzDecodeTest(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"subscriptionId":"sub_1"}`, `{"subscriptionId":""}`, `[]`, `{"subscriptionId":"\u2066x"}`, `{"subscriptionid":"a","subscriptionId":"b"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		sub, err := DecodeTest(body)
		errRetry := DecodeRetry(body)
		for _, err := range []error{err, errRetry} {
			if err != nil && apperr.KindOf(err) != apperr.Invalid {
				t.Fatalf("%q: %v, want a 400", body, err)
			}
		}
		if err == nil && len(body) > 0 && !json.Valid(body) {
			t.Fatalf("%q accepted", body)
		}
		for _, r := range sub { // an identifier: no control, format or noncharacter
			if err == nil && (unicode.IsControl(r) || unicode.In(r, unicode.Cf) || r&0xFFFE == 0xFFFE || 0xFDD0 <= r && r <= 0xFDEF) {
				t.Fatalf("%q: accepted subscriptionId %q", body, sub)
			}
		}
	})
}
