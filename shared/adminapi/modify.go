package adminapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/yp/paysvc/shared/money"
)

// Modifications are the operations the dashboard offers on a payment, by
// the merchant API's endpoint under the payment; true: it takes an amount.
var Modifications = map[string]bool{"captures": true, "refunds": true, "reversals": false, "cancels": false}

// Modify makes a capture, refund, reversal or cancel (op, as its endpoint is
// named) of payment psp on siteID through the merchant API, exactly as a
// merchant's server calls it: POST /v1/ecom/{site}/payments/{psp}/{op}
// with reference, amount (captures and refunds) and idempotencyKey, so a
// form sent twice makes one operation. It returns the API's answer.
func (l *Local) Modify(ctx context.Context, merchantID, siteID, psp, op string, amount money.Amount, reference, idempotencyKey string) (json.RawMessage, error) {
	takesAmount, ok := Modifications[op]
	if !ok {
		return nil, fmt.Errorf("no operation %q: captures, refunds, reversals or cancels", op)
	}
	if strings.TrimSpace(idempotencyKey) == "" {
		return nil, fmt.Errorf("%s of %s: an Idempotency-Key is required", op, psp)
	}
	body := map[string]any{"reference": reference}
	if takesAmount {
		body["amount"] = amount
	}
	b, _ := json.Marshal(body) // strings and an amount: cannot fail
	return l.call(ctx, l.actions(), merchantID, http.MethodPost, "/v1/ecom/"+url.PathEscape(siteID)+"/payments/"+url.PathEscape(psp)+"/"+op, b, idempotencyKey)
}
