package jsonin

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// hasDuplicate is an independent duplicate-name check with encoding/json's
// tokenizer, for the fuzzer to compare against: a name given twice in one
// object, or with fold two names equal under bytes.EqualFold (the names
// encoding/json matches to one field).
func hasDuplicate(b []byte, fold bool) bool {
	dec := json.NewDecoder(bytes.NewReader(b))
	type frame struct {
		obj   bool
		keys  map[string]bool
		isKey bool
	}
	seen := func(keys map[string]bool, k string) bool {
		if keys[k] {
			return true
		}
		for prev := range keys {
			if fold && strings.EqualFold(prev, k) {
				return true
			}
		}
		return false
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.obj && top.isKey {
			if d, ok := tok.(json.Delim); !ok || d != '}' {
				k, _ := tok.(string)
				if seen(top.keys, k) {
					return true
				}
				top.keys[k] = true
				top.isKey = false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			if top != nil && top.obj {
				top.isKey = true
			}
			stack = append(stack, &frame{obj: true, keys: map[string]bool{}, isKey: true})
			continue
		case json.Delim('['):
			if top != nil && top.obj {
				top.isKey = true
			}
			stack = append(stack, &frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				return false
			}
			continue
		}
		if top != nil && top.obj {
			top.isKey = true // a value was read: a key comes next
		}
	}
}

// textChanged is an independent check that encoding/json reads a string of
// b, a valid JSON document, as other text than it spells: each byte that
// is not UTF-8 and each unpaired surrogate escape decodes to U+FFFD, so it
// counts the U+FFFD decoded (names and values, by the tokenizer) against
// those spelled (literally or as \ufffd).
func textChanged(b []byte) bool {
	decoded := 0
	dec := json.NewDecoder(bytes.NewReader(b))
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		if s, ok := tok.(string); ok {
			decoded += strings.Count(s, "\ufffd")
		}
	}
	spelled := bytes.Count(b, []byte("\ufffd"))
	for i := 0; i < len(b)-1; i++ {
		if b[i] != '\\' {
			continue
		}
		if b[i+1] == 'u' && i+6 <= len(b) && strings.EqualFold(string(b[i+2:i+6]), "fffd") {
			spelled++
		}
		i++ // the escaped character
	}
	return decoded != spelled
}

// FuzzParse: Parse never panics and accepts only valid JSON objects
// without a name given twice or two names that differ only in letter case
// in any object (as encoding/json's tokenizer sees them), whose text
// encoding/json reads as spelled.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"amount":{"value":1,"currency":"EUR"},"amount":{"value":2,"currency":"EUR"}}`,
		`{"a":[{"b":1},{"b":1,"b":2}]}`, `{"\u0061":1,"a":2}`, `{}`, `[]`, `{"a":"\""}`, `{"x":{"y":[1,2,{"z":null}]}}`,
		`{"paymentMethod":{"type":"x","Type":"scheme"}}`, `{"browserInfo":{"userAgent":"a","UserAgent":"b"}}`, "{\"k\":1,\"\u212a\":2}",
		`{"reference":"a\ud800b"}`, `{"a":"\ud83d\ude00","b":"\\ud800"}`, "{\"a\":\"\xff\"}", `{"a":"\ufffd"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var errs Errors
		o := Parse(b, &errs)
		if o == nil {
			if !errs.Has() {
				t.Fatalf("%q: refused without a reason", b)
			}
			if strings.Contains(errs.Err().Error(), "letter case") && !hasDuplicate(b, true) {
				t.Fatalf("%q: refused for names that differ only in letter case; the tokenizer sees none", b)
			}
			return
		}
		if !json.Valid(b) {
			t.Fatalf("%q: accepted invalid JSON", b)
		}
		if textChanged(b) {
			t.Fatalf("%q: accepted text that encoding/json reads otherwise", b)
		}
		if hasDuplicate(b, true) {
			t.Fatalf("%q: accepted a duplicate name or names that differ only in letter case", b)
		}
		if path, dup := DuplicateKey(b); dup {
			t.Fatalf("%q: accepted although DuplicateKey found %s", b, path)
		}
	})
}

// FuzzDuplicateKey compares the allocation-free scan with the tokenizer.
func FuzzDuplicateKey(f *testing.F) {
	for _, s := range []string{`{"a":1,"a":2}`, `{"a":{"b":[{"c":1,"c":1}]}}`, `[{"k":1},{"k":1}]`, `{"a\u0062":1,"ab":1}`, `{"a":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return // DuplicateKey's contract: a valid document
		}
		_, got := DuplicateKey(b)
		if want := hasDuplicate(b, false); got != want {
			t.Fatalf("%q: DuplicateKey = %v, tokenizer says %v", b, got, want)
		}
	})
}
