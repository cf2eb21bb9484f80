package idempotency

import (
	"bytes"
	"testing"
)

func TestCanonicalJSON(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"b":1,"a":{"d":[1,2,{"z":true,"y":null}],"c":"x"}}`, `{"a":{"c":"x","d":[1,2,{"y":null,"z":true}]},"b":1}`},
		{" {\n\t\"a\" : [ ] , \"b\" : { } }\r\n", `{"a":[],"b":{}}`},
		{`{"n":-1.50e+10,"m":0,"o":1E-7}`, `{"m":0,"n":-1.50e+10,"o":1E-7}`}, // numbers as written
		{`{"s":"\u00e9\/<>"}`, `{"s":"é/\u003c\u003e"}`},                     // encoding/json's escaping
		{`{"a":1,"a":2}`, `{"a":2}`},
		{`{"k\u0041":1,"a":3}`, `{"a":3,"kA":1}`},
		{`[1, "2", [3]]`, `[1,"2",[3]]`},
		{` 42 `, `42`},
		// Not one JSON value: compared as sent.
		{``, ``}, {`{`, `{`}, {`{"a":}`, `{"a":}`}, {`[1,]`, `[1,]`}, {`{"a":1} {}`, `{"a":1} {}`}, {`{"a":01}`, `{"a":01}`},
	} {
		if got := canonicalJSON([]byte(c.in)); !bytes.Equal(got, []byte(c.want)) {
			t.Errorf("%q: got %s, want %s", c.in, got, c.want)
		}
	}
}

// FuzzCanonicalJSON: the canonical form of a JSON value is its own
// canonical form, and anything else is left as sent.
func FuzzCanonicalJSON(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[true,null,"x"]}`, `"\u00e9"`, `[1e3]`, `{"a":1,"a":2}`, `{"a"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c := canonicalJSON(b)
		if again := canonicalJSON(c); !bytes.Equal(again, c) {
			t.Fatalf("%q: canonical %s is not its own canonical form (%s)", b, c, again)
		}
	})
}
