package jsonin

import (
	"strings"
	"testing"

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
