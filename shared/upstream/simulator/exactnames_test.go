package simulator

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// The simulator reads member names as the platform does: exactly. A name
// in another letter case is an unknown member, ignored; encoding/json
// alone would take it for the field ("Type" won over "type").
func TestUnmarshalMatchesNamesExactly(t *testing.T) {
	type inner struct {
		Name string `json:"name"`
	}
	type embedded struct {
		Promoted string `json:"promoted"`
	}
	type doc struct {
		embedded
		Type   string            `json:"type"`
		Inner  *inner            `json:"inner"`
		List   []inner           `json:"list"`
		ByKey  map[string]inner  `json:"byKey"`
		Raw    json.RawMessage   `json:"raw"`
		Any    map[string]any    `json:"any"`
		Plain  map[string]string `json:"plain"`
		NoTag  string
		Hidden string `json:"-"`
	}
	tests := []struct {
		name, body string
		want       doc
	}{
		{"exact", `{"type":"scheme"}`, doc{Type: "scheme"}},
		{"case twin: the exact one counts", `{"type":"x","Type":"scheme"}`, doc{Type: "x"}},
		{"case twin, the other order", `{"Type":"scheme","type":"x"}`, doc{Type: "x"}},
		{"another case alone is unknown", `{"TYPE":"scheme"}`, doc{}},
		{"Kelvin sign", "{\"\u212aype\":1}", doc{}},
		{"nested pointer", `{"inner":{"name":"a","Name":"b","NAME":"c"}}`, doc{Inner: &inner{Name: "a"}}},
		{"slice", `{"list":[{"Name":"b"},{"name":"a"}]}`, doc{List: []inner{{}, {Name: "a"}}}},
		{"map values", `{"byKey":{"K":{"Name":"b"},"k":{"name":"a"}}}`, doc{ByKey: map[string]inner{"K": {}, "k": {Name: "a"}}}},
		{"map keys stay as sent", `{"plain":{"A":"1","a":"2"}}`, doc{Plain: map[string]string{"A": "1", "a": "2"}}},
		{"raw kept as sent", `{"raw":{"Type":"scheme"}}`, doc{Raw: json.RawMessage(`{"Type":"scheme"}`)}},
		{"map[string]any kept", `{"any":{"Type":"scheme"}}`, doc{Any: map[string]any{"Type": "scheme"}}},
		{"embedded field promoted", `{"promoted":"p","Promoted":"q"}`, doc{embedded: embedded{Promoted: "p"}}},
		{"untagged field by its Go name", `{"NoTag":"n","notag":"m"}`, doc{NoTag: "n"}},
		{"json:\"-\" stays unread", `{"Hidden":"h","-":"x"}`, doc{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got doc
			must(t, unmarshal([]byte(tt.body), &got))
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
	// What encoding/json reports stays the same.
	var d doc
	for body, want := range map[string]string{`{"inner":{"name":1}}`: "inner.name", `{"type":`: "unexpected end"} {
		if err := unmarshal([]byte(body), &d); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error about %s", body, err, want)
		}
	}
}

// A payment whose paymentMethod carries "type" and "Type" is read by its
// "type", and card fields in another letter case are not card fields: the
// attack run's {"type":"x","Type":"scheme"} was authorised.
func TestPaymentMethodNamesMatchExactly(t *testing.T) {
	e := newEnv(t)
	const card = `"encryptedCardNumber":"test_4111111111111111","encryptedExpiryMonth":"test_03","encryptedExpiryYear":"test_2030","encryptedSecurityCode":"test_737"`
	body := func(pm string) string {
		return strings.Replace(paymentBody, `"paymentMethod":{"type":"scheme",`+card+`}`, `"paymentMethod":`+pm, 1)
	}
	if body("x") == paymentBody {
		t.Fatal("fixture: paymentBody has no such paymentMethod")
	}
	for _, tc := range []struct {
		name, pm   string
		authorised bool
	}{
		{"as documented", `{"type":"scheme",` + card + `}`, true},
		{"type and Type", `{"type":"x","Type":"scheme",` + card + `}`, false},
		{"Type and type", `{"Type":"scheme","type":"x",` + card + `}`, false},
		{"card number in another case", `{"type":"scheme","EncryptedCardNumber":"test_4111111111111111","encryptedExpiryMonth":"test_03","encryptedExpiryYear":"test_2030","encryptedSecurityCode":"test_737"}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, b, _ := e.raw(t, "POST", "/v71/payments", testAPIKey, "", body(tc.pm))
			var out struct{ ResultCode string }
			_ = json.Unmarshal(b, &out)
			if got := s == 200 && out.ResultCode == "Authorised"; got != tc.authorised {
				t.Fatalf("%d %s, want authorised %v", s, b, tc.authorised)
			}
		})
	}
}

// FuzzUnmarshalExact compares unmarshal into the flat paymentMethodIn with
// reading each field's exact name from the object by hand.
func FuzzUnmarshalExact(f *testing.F) {
	for _, s := range []string{`{"type":"x","Type":"scheme"}`, `{"TYPE":"a","number":"4111"}`, `{"holderName":"a","HolderName":"b","holdername":"c"}`, `[]`, `{"type":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var got paymentMethodIn
		if err := unmarshal(b, &got); err != nil {
			return
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(b, &m) != nil {
			return // null, or not an object
		}
		var want paymentMethodIn
		rv := reflect.ValueOf(&want).Elem()
		for i := range rv.NumField() {
			name, _, _ := strings.Cut(rv.Type().Field(i).Tag.Get("json"), ",")
			if raw, ok := m[name]; ok && string(raw) != "null" {
				var s string
				if err := json.Unmarshal(raw, &s); err != nil {
					t.Fatalf("%q: unmarshal accepted %s: %s", b, name, raw)
				}
				rv.Field(i).SetString(s)
			}
		}
		if got != want {
			t.Fatalf("%q:\ngot  %+v\nwant %+v", b, got, want)
		}
	})
}
