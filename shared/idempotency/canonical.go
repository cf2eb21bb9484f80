package idempotency

import (
	"bytes"
	"encoding/json"
	"io"
)

// canonicalJSON returns body in canonical form: one JSON value decoded
// (numbers as written) and marshalled again, so insignificant whitespace
// is dropped, object members are sorted by key (the last of duplicates
// kept) and strings are in encoding/json's escaping. A body that is not a
// single JSON value is returned unchanged (it is then compared byte for
// byte).
func canonicalJSON(body []byte) []byte {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return body
	}
	if _, err := dec.Token(); err != io.EOF {
		return body // more after the value
	}
	out, err := json.Marshal(v)
	if err != nil {
		return body
	}
	return out
}
