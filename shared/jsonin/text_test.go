package jsonin

import (
	"strings"
	"testing"
)

// Text a decoder would not read as spelled (a byte that is not UTF-8, an
// unpaired surrogate escape) is refused with the field that holds it; a
// pair, an escaped backslash before "u" and U+FFFD itself are text.
func TestStrangeTextNamesTheField(t *testing.T) {
	tests := []struct {
		name, body, field, msg string // field "-": accepted
	}{
		{"lone high surrogate", `{"reference":"a\ud800b"}`, "reference", `\ud800`},
		{"lone low surrogate", `{"reference":"\uDC00"}`, "reference", `\uDC00`},
		{"high then not low", `{"a":"\ud800\u0041"}`, "a", `\ud800`},
		{"high then high", `{"a":"\ud800\ud800"}`, "a", `\ud800`},
		{"high at the end", `{"a":"x\udbff"}`, "a", `\udbff`},
		{"high, then an escaped backslash", `{"a":"\ud800\\udc00"}`, "a", `\ud800`},
		{"nested", `{"shopperName":{"firstName":"\ud83d"}}`, "shopperName.firstName", `\ud83d`},
		{"in an array", `{"lineItems":[{"id":"1"},{"description":"\ude00"}]}`, "lineItems[1].description", `\ude00`},
		{"array of strings", `{"blocked":["ok","\ud800"]}`, "blocked[1]", `\ud800`},
		{"in a member name", `{"x":{"a\ud800":1}}`, "x.a\ufffd", `\ud800`},
		{"after other escapes", `{"a":"\"\\\n\u00e9","b":"\t\udfff"}`, "b", `\udfff`},
		{"not UTF-8", "{\"reference\":\"a\xffb\"}", "reference", "0xFF"},
		{"truncated sequence", "{\"shopperName\":{\"lastName\":\"\xc3\"}}", "shopperName.lastName", "0xC3"},
		{"encoded surrogate", "{\"a\":[\"\xed\xa0\x80\"]}", "a[0]", "0xED"},
		{"not UTF-8 in a name", "{\"\xfe\":1}", "\ufffd", "0xFE"},
		{"pair", `{"a":"\ud83d\ude00","b":"\uD83D\uDE00"}`, "-", ""},
		{"escaped backslash then u", `{"a":"\\ud800"}`, "-", ""},
		{"U+FFFD itself", `{"a":"\ufffd","b":"` + "\ufffd" + `"}`, "-", ""},
		{"other escapes", `{"a":"\"\\\/\b\f\n\r\t\u0041\u00e9\u20ac"}`, "-", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := refusal(t, tt.body)
			if (tt.field == "-") != (got == nil) ||
				got != nil && (len(got) != 1 || got[0].Field != tt.field || !strings.Contains(got[0].Message, tt.msg)) {
				t.Fatalf("refused %+v, want field %q named with %q", got, tt.field, tt.msg)
			}
		})
	}
}

// A body that is neither JSON nor UTF-8 has no field to name.
func TestNotUTF8NorJSON(t *testing.T) {
	var errs Errors
	if o := Parse([]byte("{\xff"), &errs); o != nil || fields(errs.Err())[0] != ": request body must be UTF-8 JSON" {
		t.Fatalf("%v", fields(errs.Err()))
	}
}

func TestPathAt(t *testing.T) {
	doc := []byte(`{ "a" : { "b" : [ 1 , { "c" : "xy" } ] } , "d" : "z" , "e":[[],["q"]] }`)
	for _, tc := range []struct {
		at   string // the text at the offset
		want string
	}{
		{`"a"`, "a"}, {`"b"`, "a.b"}, {`1`, "a.b[0]"}, {`"c"`, "a.b[1].c"}, {`xy`, "a.b[1].c"},
		{`"z"`, "d"}, {`"q"`, "e[1][0]"},
	} {
		if got := pathAt(doc, strings.Index(string(doc), tc.at)); got != tc.want {
			t.Errorf("pathAt(%s) = %q, want %q", tc.at, got, tc.want)
		}
	}
}
