package upstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/yp/paysvc/shared/jsonin"
	"github.com/yp/paysvc/shared/money"
)

// decodePaymentResponse decodes the answer of POST /payments and
// /payments/details — every payment's hot path — without reflection: the
// body is copied to one string once and every string field without escapes
// is a slice of it. It accepts and refuses what encoding/json does for
// PaymentResponse (unknown members ignored, null leaves a field unset, the
// last of duplicate members wins, a value of the wrong type is an error),
// except that member names must match in case, as the upstream sends them,
// and that an "action" of null is no action.
func decodePaymentResponse(raw []byte) (PaymentResponse, error) {
	var out PaymentResponse
	if !utf8.Valid(raw) { // encoding/json's replacement of bad bytes, exactly
		return decodeReflect(raw)
	}
	if !json.Valid(raw) {
		return out, errors.New("invalid JSON")
	}
	if isNull(bytes.TrimSpace(raw)) {
		return out, nil
	}
	d := respDecoder{src: jsonin.NewSource(raw)}
	var err error
	ok := jsonin.EachMember(raw, func(name []byte, v json.RawMessage) bool {
		switch string(name) {
		case "resultCode":
			err = d.str(v, &out.ResultCode)
		case "pspReference":
			err = d.str(v, &out.PSPReference)
		case "refusalReason":
			err = d.str(v, &out.RefusalReason)
		case "refusalReasonCode":
			err = d.str(v, &out.RefusalReasonCode)
		case "merchantReference":
			err = d.str(v, &out.MerchantReference)
		case "action":
			if !isNull(v) {
				out.Action = v
			}
		case "amount":
			out.Amount, err = d.amount(v)
		case "paymentMethod":
			out.PaymentMethod, err = d.paymentMethod(v)
		case "additionalData":
			out.AdditionalData, err = d.stringMap(v)
		}
		if err != nil {
			err = fmt.Errorf("%s: %w", name, err)
		}
		return err == nil
	})
	switch {
	case err != nil:
		return PaymentResponse{}, err
	case !ok:
		return PaymentResponse{}, errors.New("not a JSON object")
	}
	return out, nil
}

// decodeReflect is encoding/json's decoding of a payment response (its
// own function: the value it decodes into escapes to the heap).
func decodeReflect(raw []byte) (PaymentResponse, error) {
	var out PaymentResponse
	err := json.Unmarshal(raw, &out)
	return out, err
}

// respDecoder reads values of one document (a string value without
// escapes is a slice of the source's one string).
type respDecoder struct{ src jsonin.Source }

var errNotString = errors.New("must be a string")

func isNull(v []byte) bool { return string(v) == "null" }

// str sets *dst to the string value v (a slice of the document); null leaves it.
func (d respDecoder) str(v []byte, dst *string) error {
	s, null, err := d.value(v)
	if err == nil && !null {
		*dst = s
	}
	return err
}

// value is the string value v (a slice of the document), or null. It returns the
// string rather than store through a pointer, so a caller's variable stays
// on its stack.
func (d respDecoder) value(v []byte) (s string, null bool, err error) {
	switch {
	case isNull(v):
		return "", true, nil
	case len(v) < 2 || v[0] != '"':
		return "", false, errNotString
	case bytes.IndexByte(v, '\\') < 0:
		return d.src.String(v[1 : len(v)-1]), false, nil
	}
	s, err = unescape(v)
	return s, false, err
}

// unescape decodes a string token with escapes (its own function: the
// variable it decodes into escapes to the heap).
func unescape(v []byte) (string, error) {
	var s string
	err := json.Unmarshal(v, &s)
	return s, err
}

func (d respDecoder) amount(v []byte) (*money.Amount, error) {
	if isNull(v) {
		return nil, nil
	}
	a := &money.Amount{}
	var err error
	ok := jsonin.EachMember(v, func(name []byte, v json.RawMessage) bool {
		switch string(name) {
		case "value":
			if !isNull(v) {
				a.Value, err = strconv.ParseInt(string(v), 10, 64)
			}
		case "currency":
			err = d.str(v, &a.Currency)
		}
		return err == nil
	})
	if err != nil || !ok {
		return nil, fmt.Errorf("not an amount: %s", v)
	}
	return a, nil
}

func (d respDecoder) paymentMethod(v []byte) (*PaymentMethodInfo, error) {
	if isNull(v) {
		return nil, nil
	}
	m := &PaymentMethodInfo{}
	var err error
	ok := jsonin.EachMember(v, func(name []byte, v json.RawMessage) bool {
		switch string(name) {
		case "type":
			err = d.str(v, &m.Type)
		case "brand":
			err = d.str(v, &m.Brand)
		}
		return err == nil
	})
	if err != nil || !ok {
		return nil, fmt.Errorf("not a payment method: %s", v)
	}
	return m, nil
}

func (d respDecoder) stringMap(v []byte) (map[string]string, error) {
	if isNull(v) {
		return nil, nil
	}
	m := map[string]string{}
	var err error
	ok := jsonin.EachMember(v, func(name []byte, v json.RawMessage) bool {
		var s string
		if s, _, err = d.value(v); err == nil {
			m[d.src.String(name)] = s // null: "", as encoding/json
		}
		return err == nil
	})
	if err != nil || !ok {
		return nil, fmt.Errorf("not an object of strings: %s", v)
	}
	return m, nil
}
