package idempotency

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// reference is the straightforward canonical form: decode (numbers as
// written) and re-marshal. canonicalJSON must produce exactly this for a
// valid JSON value, and return anything else unchanged.
func reference(body []byte) []byte {
	if !json.Valid(body) {
		return body
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return body
	}
	out, err := json.Marshal(v)
	if err != nil {
		return body
	}
	return out
}

func TestCanonicalJSONMatchesReference(t *testing.T) {
	cases := []string{
		`{"b":1,"a":{"d":[1,2,{"z":true,"y":null}],"c":"x"}}`,
		" {\n\t\"a\" : [ ] , \"b\" : { } }\r\n",
		`{"amount":{"value":1000,"currency":"EUR"},"paymentMethod":{"type":"scheme","encryptedCardNumber":"test_4111111111111111"}}`,
		`{"n":-1.50e+10,"m":0,"o":1E-7}`,
		`{"s":"\u00e9\n\"\\\/<>&\u2028 \ud83d\ude00"}`,
		`{"s":"é <b> & plain"}`,
		"{\"bad\":\"\xff\xfe\"}",
		`{"a":1,"a":2}`,
		`{"k\u0041":1,"kA":2,"a":3}`,
		`"just a string"`, `42`, `true`, `null`, `[]`, `[1,"2",[3]]`,
		``, ` `, `{`, `{"a":}`, `{"a" 1}`, `[1,]`, `{"a":1} {}`, `tru`, `-`, `{"a":01}`, `"unterminated`,
	}
	for _, c := range cases {
		got, want := canonicalJSON([]byte(c)), reference([]byte(c))
		if !bytes.Equal(got, want) {
			t.Errorf("%q:\n got %s\nwant %s", c, got, want)
		}
	}
}

// randomJSON builds a random value with random formatting.
func randomJSON(r *rand.Rand, depth int) string {
	ws := func() string { return []string{"", " ", "\n", "\t "}[r.IntN(4)] }
	if depth > 3 {
		return fmt.Sprint(r.IntN(1000) - 500)
	}
	switch r.IntN(7) {
	case 0:
		n := r.IntN(4)
		parts := make([]string, n)
		for i := range parts {
			key := []string{"a", "b", "amount", "z", "é", `\u0061`, "k<>", "a"}[r.IntN(8)]
			parts[i] = ws() + `"` + key + `"` + ws() + ":" + ws() + randomJSON(r, depth+1)
		}
		return "{" + strings.Join(parts, ",") + ws() + "}"
	case 1:
		n := r.IntN(4)
		parts := make([]string, n)
		for i := range parts {
			parts[i] = ws() + randomJSON(r, depth+1) + ws()
		}
		return "[" + strings.Join(parts, ",") + "]"
	case 2:
		return []string{`"x"`, `"\n\t"`, `"\u00e9"`, `"é"`, `"<&>"`, `"\ud83d\ude00"`, `"a\/b"`}[r.IntN(7)]
	case 3:
		return []string{"1.5", "-0", "1e3", "2E-2", "123456789012"}[r.IntN(5)]
	case 4:
		return []string{"true", "false", "null"}[r.IntN(3)]
	default:
		return fmt.Sprint(r.IntN(100))
	}
}

func TestCanonicalJSONRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 5000; i++ {
		c := randomJSON(r, 0)
		got, want := canonicalJSON([]byte(c)), reference([]byte(c))
		if !bytes.Equal(got, want) {
			t.Fatalf("%q:\n got %s\nwant %s", c, got, want)
		}
	}
}

func FuzzCanonicalJSON(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[true,null,"x"]}`, `"\u00e9"`, `[1e3]`, `{"a":1,"a":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := canonicalJSON(b), reference(b); !bytes.Equal(got, want) {
			t.Fatalf("%q:\n got %s\nwant %s", b, got, want)
		}
	})
}
