package webhooksapp

import (
	"encoding/json"
	"testing"

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
}

// A refused body is always a 400; an accepted one is valid JSON (or empty).
func FuzzDecodeTest(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"subscriptionId":"sub_1"}`, `{"subscriptionId":""}`, `[]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		_, err := DecodeTest(body)
		errRetry := DecodeRetry(body)
		for _, err := range []error{err, errRetry} {
			if err != nil && apperr.KindOf(err) != apperr.Invalid {
				t.Fatalf("%q: %v, want a 400", body, err)
			}
		}
		if err == nil && len(body) > 0 && !json.Valid(body) {
			t.Fatalf("%q accepted", body)
		}
	})
}
