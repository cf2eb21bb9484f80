package provision_test

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"

	"github.com/yp/paysvc/shared/jsonin"
	"github.com/yp/paysvc/shared/provision"
)

// FuzzParseSeed: a seed document is accepted only when it is valid JSON with
// no name given twice and no unknown field, and what is accepted survives a
// marshal/parse round trip (nothing is silently dropped or reinterpreted).
func FuzzParseSeed(f *testing.F) {
	if b, err := os.ReadFile("../../cmd/paysvc-local/seed.example.json"); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`{"merchants":[{"id":"m_x","name":"X","country":"NL"}],"merchants":[]}`))
	f.Add([]byte(`{"subscriptions":[{"id":"s","merchantId":"m","url":"https://a.example/","allowInsecureLocal":true}]}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := provision.ParseSeed(b)
		if err != nil {
			return
		}
		if !json.Valid(b) {
			t.Fatalf("%q: accepted invalid JSON", b)
		}
		if p, dup := jsonin.DuplicateKey(b); dup {
			t.Fatalf("%q: accepted a duplicate %s", b, p)
		}
		raw, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		again, err := provision.ParseSeed(raw)
		if err != nil {
			t.Fatalf("the re-marshalled seed is refused: %v\n%s", err, raw)
		}
		if !reflect.DeepEqual(s, again) {
			t.Fatalf("round trip changed the seed:\n%+v\n%+v", s, again)
		}
	})
}
