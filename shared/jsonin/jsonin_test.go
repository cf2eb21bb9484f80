package jsonin

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
	"unsafe"

	"github.com/yp/paysvc/shared/apperr"
)

func fields(err error) []string {
	if err == nil {
		return nil
	}
	var out []string
	for _, f := range apperr.As(err).Fields {
		out = append(out, f.Field+": "+f.Message)
	}
	return out
}

func TestPaths(t *testing.T) {
	var errs Errors
	o := Parse([]byte(`{"a":{"b":[{"c":1},{"c":"x"}]},"s":["ok",5],"m":{"k":1},"n":null,"zzz":1}`), &errs)
	a := o.Object("a", true)
	for _, el := range a.Objects("b", true, 10) {
		el.String("c", true)
		el.Done()
	}
	a.Done()
	o.Strings("s", false, 5)
	o.StringMap("m", false, 5, nil)
	o.String("n", false)
	o.Done()
	got := strings.Join(fields(errs.Err()), "|")
	want := "a.b[0].c: must be a string|s[1]: must be a string|m.k: must be a string|zzz: is not a known field"
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestScalars(t *testing.T) {
	for _, tc := range []struct {
		body string
		want string
	}{
		{`{"i":1}`, ""},
		{`{"i":1.0}`, "i: must be an integer"},
		{`{"i":1e3}`, "i: must be an integer"},
		{`{"i":"1"}`, "i: must be an integer"},
		{`{"i":99}`, "i: must be between 0 and 10"},
		{`{"i":null}`, "i: is required"},
		{`{}`, "i: is required"},
	} {
		var errs Errors
		o := Parse([]byte(tc.body), &errs)
		o.Int("i", true, 0, 10)
		o.Done()
		if got := strings.Join(fields(errs.Err()), "|"); got != tc.want {
			t.Errorf("%s: got %q want %q", tc.body, got, tc.want)
		}
	}
}

func TestMalformed(t *testing.T) {
	for _, body := range []string{``, `[]`, `"x"`, `{"a":`, `{"a":1} x`, `null`, "\xff"} {
		var errs Errors
		if o := Parse([]byte(body), &errs); o != nil || !errs.Has() {
			t.Errorf("%q parsed", body)
		}
	}
}

func TestRules(t *testing.T) {
	for _, tc := range []struct {
		rule Str
		in   string
		ok   bool
	}{
		{MaxLen(3), "abc", true}, {MaxLen(3), "abcd", false}, {MaxLen(3), "ééé", true},
		{LenBetween(3, 4), "ab", false}, {NotEmpty, " ", false},
		{OneOf("a", "b"), "b", true}, {OneOf("a", "b"), "c", false},
		{AbsoluteURL, "https://x.y/z", true}, {AbsoluteURL, "/rel", false}, {AbsoluteURL, "ftp://x", false},
		{NoControl, "a\nb", false},
	} {
		if got := tc.rule(tc.in) == ""; got != tc.ok {
			t.Errorf("rule on %q = %v", tc.in, got)
		}
	}
}

// The splitters must agree with encoding/json on every valid document.
func TestSplittersMatchEncodingJSON(t *testing.T) {
	docs := []string{
		`{}`, ` { "a" : 1 , "b":[1, {"c":"}]\"{"}], "d":{"e":null}, "f":"\u00e9\"", "a":2 }`,
		`{"s":"x\\","t":[],"u":{},"v":-1.5e3,"w":true,"x":false}`,
		`{"k\u0041":1}`,
	}
	for _, d := range docs {
		var want map[string]json.RawMessage
		if err := json.Unmarshal([]byte(d), &want); err != nil {
			t.Fatal(err)
		}
		got, ok := splitMap([]byte(d))
		if !ok || len(got) != len(want) {
			t.Fatalf("%s: got %v (%v), want %v", d, got, ok, want)
		}
		for k, v := range want {
			if string(got[k]) != string(v) {
				t.Fatalf("%s: %q = %s, want %s", d, k, got[k], v)
			}
		}
	}
	for _, d := range []string{`[]`, `[1, "a]", {"b":[2]}, [3,[4]], null ]`} {
		var want []json.RawMessage
		if err := json.Unmarshal([]byte(d), &want); err != nil {
			t.Fatal(err)
		}
		got, ok := splitArray([]byte(d))
		if !ok || len(got) != len(want) {
			t.Fatalf("%s: got %v, want %v", d, got, want)
		}
		for i := range want {
			if string(got[i]) != string(want[i]) {
				t.Fatalf("%s[%d] = %s, want %s", d, i, got[i], want[i])
			}
		}
	}
	for _, notObject := range []string{`[]`, `"x"`, `1`, `null`} {
		if _, ok := splitMap([]byte(notObject)); ok {
			t.Errorf("%s split as an object", notObject)
		}
	}
}

func FuzzSplitObject(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":[{"c":"]"}],"a":"\""}`, `{}`, `{"x":{"y":[1,2,{"z":null}]}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) || !utf8.Valid(b) {
			return // the splitters only see documents Parse validated (UTF-8 JSON)
		}
		var want map[string]json.RawMessage
		wantErr := json.Unmarshal(b, &want)
		got, ok := splitMap(b)
		if (wantErr == nil && want != nil) != ok {
			t.Fatalf("%q: split ok=%v, encoding/json err=%v", b, ok, wantErr)
		}
		if !ok {
			return
		}
		if len(got) != len(want) {
			t.Fatalf("%q: %d members, want %d", b, len(got), len(want))
		}
		for k, v := range want {
			if string(got[k]) != string(v) {
				t.Fatalf("%q: %q = %s, want %s", b, k, got[k], v)
			}
		}
	})
}

// splitMap is splitObject as a map (name -> value).
func splitMap(b []byte) (map[string]json.RawMessage, bool) {
	m, ok := splitObject(b, nil)
	if !ok {
		return nil, false
	}
	out := make(map[string]json.RawMessage, len(m))
	for _, f := range m {
		out[string(f.name)] = f.raw
	}
	return out, true
}

// TestDocumentRoom: a body whose members and nested objects outgrow the
// room Parse allocates reads the same as one that fits, and objects read
// one after another do not overwrite each other's members.
func TestDocumentRoom(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{`)
	const top, nested = 40, 7
	for i := range top {
		fmt.Fprintf(&b, `"f%02d":"v%02d",`, i, i)
	}
	for i := range nested {
		fmt.Fprintf(&b, `"o%d":{"x":"x%d","y":"y\u00e9%d","z":"z%d"},`, i, i, i, i)
	}
	b.WriteString(`"esc":"a\"b","empty":""}`)
	var errs Errors
	o := Parse([]byte(b.String()), &errs)
	if o == nil {
		t.Fatalf("Parse: %v", errs.Err())
	}
	subs := make([]*Obj, nested)
	for i := range nested {
		subs[i] = o.Object(fmt.Sprintf("o%d", i), true)
	}
	for i, s := range subs { // read after every object was split
		for _, f := range []struct{ name, want string }{
			{"x", fmt.Sprintf("x%d", i)}, {"y", fmt.Sprintf("yé%d", i)}, {"z", fmt.Sprintf("z%d", i)},
		} {
			if got, ok := s.String(f.name, true); !ok || got != f.want {
				t.Errorf("o%d.%s = %q, %v; want %q", i, f.name, got, ok, f.want)
			}
		}
		s.Done()
	}
	for i := range top {
		if got, ok := o.String(fmt.Sprintf("f%02d", i), true); !ok || got != fmt.Sprintf("v%02d", i) {
			t.Errorf("f%02d = %q, %v", i, got, ok)
		}
	}
	if got, _ := o.String("esc", true); got != `a"b` {
		t.Errorf("esc = %q", got)
	}
	if got, ok := o.String("empty", true); !ok || got != "" {
		t.Errorf("empty = %q, %v", got, ok)
	}
	o.Done()
	if err := errs.Err(); err != nil {
		t.Fatalf("errors: %v", fields(err))
	}
}

// TestDocumentStrings: a string field without escapes is a slice of the
// document's one string (no copy per field); a value that is not a slice
// of the document is copied.
func TestDocumentStrings(t *testing.T) {
	var errs Errors
	o := Parse([]byte(`{"a":"alpha","b":"beta"}`), &errs)
	a, _ := o.String("a", true)
	bb, _ := o.String("b", true)
	if unsafe.StringData(a) != unsafe.StringData(o.doc.text[strings.Index(o.doc.text, "alpha"):]) ||
		unsafe.StringData(bb) != unsafe.StringData(o.doc.text[strings.Index(o.doc.text, "beta"):]) {
		t.Errorf("strings are not slices of the document's text")
	}
	if n := testing.AllocsPerRun(100, func() { o.String("a", true) }); n != 0 {
		t.Errorf("String allocates %v times, want 0", n)
	}
	outside := []byte(`"gamma"`)
	if got, ok := o.doc.str(outside); !ok || got != "gamma" {
		t.Errorf("str of a foreign token = %q, %v", got, ok)
	}
}
