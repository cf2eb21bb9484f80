package upstreamapi

import (
	"bytes"
	"errors"
	"regexp"
)

// The checkout document marks a few properties (the refund requests'
// merchantRefundReason) with OpenAPI 3.0's "nullable": true, which an
// OpenAPI 3.1 validator refuses to compile. normaliseNullable rewrites each
// such property, in the bytes as loaded (the file stays a copy of the
// published one), to its 3.1 form: type [T, "null"], and null added to its
// enum. Only flat property objects carry it today; anything else is an
// error, so a newer copy of the document that uses it elsewhere is noticed.
var (
	nullableObject = regexp.MustCompile(`\{[^{}]*"nullable"\s*:\s*true[^{}]*\}`)
	nullableFlag   = regexp.MustCompile(`,\s*"nullable"\s*:\s*true|"nullable"\s*:\s*true\s*,?`)
	scalarType     = regexp.MustCompile(`"type"\s*:\s*("[a-z]+")`)
	enumList       = regexp.MustCompile(`("enum"\s*:\s*\[[^\]]*)\]`)
)

func normaliseNullable(spec []byte) ([]byte, error) {
	out := nullableObject.ReplaceAllFunc(spec, func(obj []byte) []byte {
		obj = nullableFlag.ReplaceAll(obj, nil)
		obj = scalarType.ReplaceAll(obj, []byte(`"type" : [ $1, "null" ]`))
		return enumList.ReplaceAll(obj, []byte(`$1, null ]`))
	})
	if bytes.Contains(out, []byte(`"nullable"`)) {
		return nil, errors.New(`upstreamapi: the checkout document uses "nullable" where it cannot be rewritten to OpenAPI 3.1`)
	}
	return out, nil
}
