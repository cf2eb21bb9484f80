package jsonin

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestTextClasses(t *testing.T) {
	tests := []struct {
		name       string
		s          string
		identifier bool // Identifier accepts s
		freeText   bool // FreeText accepts s
	}{
		{"plain", "order-2026-000123", true, true},
		{"accents", "Société Générale", true, true},
		{"CJK", "注文番号", true, true},
		{"U+FFFD itself", "a\ufffd", true, true},
		{"ZWNJ in a Persian name", "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645", false, true},
		{"ZWJ in an emoji", "\U0001F469\u200d\U0001F4BB", false, true},
		{"RLO", "order-\u202e321", false, false},
		{"LRE", "\u202a", false, false},
		{"PDF", "\u202c", false, false},
		{"LRI", "\u2066x", false, false},
		{"PDI", "x\u2069", false, false},
		{"LRM is a format character, not an override", "a\u200eb", false, true},
		{"ALM", "a\u061cb", false, true},
		{"zero-width space", "order\u200b1", false, true},
		{"BOM", "\ufeffref", false, true},
		{"soft hyphen", "re\u00adf", false, true},
		{"word joiner", "a\u2060b", false, true},
		{"tag character", "a\U000E0041", false, true},
		{"noncharacter U+FDD0", "a\ufdd0", false, true},
		{"noncharacter U+FFFE", "a\ufffe", false, true},
		{"noncharacter U+10FFFF", "a\U0010ffff", false, true},
		{"noncharacter U+1FFFF", "\U0001ffff", false, true},
		{"newline", "a\nb", false, true},
		{"DEL", "a\x7f", false, true},
		{"C1 control", "a\u0085b", false, true},
		{"private use", "a\ue000", true, true},
		{"not UTF-8 (a path or query value)", "a\xffb", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Identifier(tt.s) == ""; got != tt.identifier {
				t.Errorf("Identifier(%q) = %q", tt.s, Identifier(tt.s))
			}
			if got := FreeText(tt.s) == ""; got != tt.freeText {
				t.Errorf("FreeText(%q) = %q", tt.s, FreeText(tt.s))
			}
		})
	}
	if msg := Identifier("a\u202eb"); !strings.Contains(msg, "U+202E") {
		t.Errorf("the message names the character: %q", msg)
	}
}

// Rules given to RawObject, PassThrough and StringMap reach every string
// passed on, at any depth, each breach named by its path.
func TestPassedOnText(t *testing.T) {
	body := `{"billingAddress":{"street":"Main \u202e1","city":"A","extra":[1,{"x":"` + "\u2067" + `"}]},` +
		`"paymentMethod":{"type":"scheme","holderName":"J\u202dS","nested":{"deep":["ok","\u202a"]},"n":5},` +
		`"additionalData":{"k":"v\u2066"},"clean":{"a":"b\u200cc","n":null}}`
	var errs Errors
	o := Parse([]byte(body), &errs)
	o.RawObject("billingAddress", false, FreeText)
	o.RawObject("clean", false, FreeText)
	pm := o.Object("paymentMethod", true)
	pm.String("type", true, Identifier)
	pm.PassThrough(FreeText)
	pm.Done() // nothing unknown: passed through
	o.StringMap("additionalData", false, 5, nil, FreeText)
	o.Done()
	got := strings.Join(fields(errs.Err()), "|")
	for _, want := range []string{
		"billingAddress.street: must not contain U+202E", "billingAddress.extra[1].x: must not contain U+2067",
		"paymentMethod.holderName: must not contain U+202D", "paymentMethod.nested.deep[1]: must not contain U+202A",
		"additionalData.k: must not contain U+2066",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in %s", want, got)
		}
	}
	if n := len(fields(errs.Err())); n != 5 {
		t.Errorf("%d errors, want 5: %s", n, got)
	}
}

// Checking the strings passed on costs no allocation when they pass.
func TestPassedOnTextAllocations(t *testing.T) {
	body := []byte(`{"browserInfo":{"userAgent":"Mozilla/5.0","language":"nl-NL","colorDepth":24,"javaEnabled":false},` +
		`"billingAddress":{"street":"Simon Carmiggeltstraat","city":"Amsterdam","lines":["a","b"]}}`)
	var errs Errors
	o := Parse(body, &errs)
	if n := testing.AllocsPerRun(100, func() {
		o.RawObject("browserInfo", false, FreeText)
		o.RawObject("billingAddress", false, FreeText, Identifier)
	}); n != 0 {
		t.Errorf("%v allocations, want 0", n)
	}
	if errs.Has() {
		t.Fatal(fields(errs.Err()))
	}
}

// FuzzTextClasses compares the rules with the Unicode tables read another
// way: Identifier refuses exactly controls, format characters and
// noncharacters; FreeText exactly the bidirectional controls other than
// the marks (ALM, LRM, RLM).
func FuzzTextClasses(f *testing.F) {
	for _, s := range []string{"order-1", "a\u202eb", "\u200c", "\ufdef", "\U0010fffe", "\x00", "\u0085", "\u061c", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		wantID, wantFree := utf8.ValidString(s), true
		for _, r := range s {
			if unicode.IsControl(r) || unicode.In(r, unicode.Cf) || r&0xFFFE == 0xFFFE || 0xFDD0 <= r && r <= 0xFDEF {
				wantID = false
			}
			if unicode.In(r, unicode.Bidi_Control) && r != 0x061C && r != 0x200E && r != 0x200F {
				wantFree = false
			}
		}
		if got := Identifier(s) == ""; got != wantID {
			t.Errorf("Identifier(%q) = %q, want ok %v", s, Identifier(s), wantID)
		}
		if got := FreeText(s) == ""; got != wantFree {
			t.Errorf("FreeText(%q) = %q, want ok %v", s, FreeText(s), wantFree)
		}
	})
}

// FuzzPassThrough: rules given to PassThrough reach every string of every
// member at any depth (compared with encoding/json's reading of the body):
// a body is refused exactly when one of its strings is not free text.
func FuzzPassThrough(f *testing.F) {
	for _, s := range []string{`{"a":{"b":["x",{"c":"\u202e"}]}}`, `{"a":"ok","b":[1,2]}`, "{\"a\":\"\u2066\"}", `{"\u202e":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var errs Errors
		o := Parse(b, &errs)
		if o == nil {
			return
		}
		o.PassThrough(FreeText)
		o.Done()
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("%q: Parse accepted what encoding/json refuses: %v", b, err)
		}
		if want := anyString(v, func(s string) bool { return FreeText(s) != "" }); errs.Has() != want {
			t.Fatalf("%q: refused %v (%v), a string breaks FreeText: %v", b, errs.Has(), fields(errs.Err()), want)
		}
	})
}

// anyString reports whether bad holds for a string value of v at any depth.
func anyString(v any, bad func(string) bool) bool {
	switch v := v.(type) {
	case string:
		return bad(v)
	case map[string]any:
		for _, e := range v {
			if anyString(e, bad) {
				return true
			}
		}
	case []any:
		for _, e := range v {
			if anyString(e, bad) {
				return true
			}
		}
	}
	return false
}
