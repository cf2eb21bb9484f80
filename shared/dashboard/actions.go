package dashboard

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/yp/paysvc/shared/adminapi"
	"github.com/yp/paysvc/shared/money"
)

// modifyForm is one operation a payment's page offers: a form posting to
// the merchant API's endpoint through the dashboard, with an
// Idempotency-Key made for this page (sent twice, one operation).
type modifyForm struct {
	Op, Label      string
	TakesAmount    bool
	Amount         int64
	Currency       string
	IdempotencyKey string
}

// modifyForms are the capture, refund, reversal and cancel forms of a payment
// (view: its lookup answer), their amounts at first what is left to
// capture (authorised less captured and in flight) and the refundable
// amount; the API decides what is allowed.
func modifyForms(view map[string]any) []modifyForm {
	amount, _ := asAmount(view["amount"])
	authorised, _ := asAmount(view["authorisedAmount"])
	captured, _ := asAmount(view["capturedAmount"])
	inFlight, _ := asAmount(view["capturesInFlight"])
	refundable, _ := asAmount(view["refundableAmount"])
	forms := []modifyForm{
		{Op: "captures", Label: "Capture", TakesAmount: true, Amount: max(authorised.Value-captured.Value-inFlight.Value, 0), Currency: amount.Currency},
		{Op: "refunds", Label: "Refund", TakesAmount: true, Amount: refundable.Value, Currency: amount.Currency},
		{Op: "reversals", Label: "Reverse (cancel or refund)"},
		{Op: "cancels", Label: "Cancel the uncaptured rest"},
	}
	for i := range forms {
		b := make([]byte, 8)
		_, _ = rand.Read(b)
		forms[i].IdempotencyKey = "dashboard-" + hex.EncodeToString(b)
	}
	return forms
}

// modify posts a payment's operation through the merchant API (the form's
// Idempotency-Key; its reference is the key too).
func (d *Dashboard) modify(ctx context.Context, r *http.Request, merchant string) (string, error) {
	f, op, psp := r.PostForm, r.PathValue("op"), r.PathValue("psp")
	var amount money.Amount
	if adminapi.Modifications[op] {
		v, err := strconv.ParseInt(strings.TrimSpace(f.Get("amount")), 10, 64)
		if err != nil || v < 1 {
			return "", fmt.Errorf("amount: a whole number of minor units, at least 1 (%q)", f.Get("amount"))
		}
		amount = money.Amount{Value: v, Currency: strings.TrimSpace(f.Get("currency"))}
	}
	key := f.Get("idempotencyKey")
	answer, err := d.local.Modify(ctx, merchant, f.Get("site"), psp, op, amount, key, key)
	if err != nil {
		return "", fmt.Errorf("POST /v1/ecom/%s/payments/%s/%s: %w", f.Get("site"), psp, op, err)
	}
	return fmt.Sprintf("POST /v1/ecom/%s/payments/%s/%s (Idempotency-Key %s): %s", f.Get("site"), psp, op, key, answer), nil
}

// paymentFilter narrows the overview's payments: Text in the reference or
// the pspReference, the state, the day created (YYYY-MM-DD, UTC).
type paymentFilter struct {
	Text, State, Date string
}

// apply returns at most limit of rows that pass f.
func (f paymentFilter) apply(rows []adminapi.PaymentRow, limit int) []adminapi.PaymentRow {
	out := []adminapi.PaymentRow{}
	text := strings.ToLower(f.Text)
	for _, p := range rows {
		switch {
		case len(out) == limit:
			return out
		case text != "" && !strings.Contains(strings.ToLower(p.Reference), text) && !strings.Contains(strings.ToLower(p.PSPReference), text):
		case f.State != "" && p.State != f.State:
		case f.Date != "" && p.CreatedAt.UTC().Format(time.DateOnly) != f.Date:
		default:
			out = append(out, p)
		}
	}
	return out
}

// states lists the states rows have, for the filter.
func states(rows []adminapi.PaymentRow) []string {
	var out []string
	for _, p := range rows {
		if p.State != "" && !slices.Contains(out, p.State) {
			out = append(out, p.State)
		}
	}
	slices.Sort(out)
	return out
}

// badgeClass is a payment state's colour: ok (money moved), open
// (authorised, waiting), wait (the shopper or the platform is to act),
// off (refused, cancelled, expired, error).
func badgeClass(state string) string {
	switch strings.TrimSuffix(state, " (simulator)") {
	case "Captured", "PartiallyCaptured", "Refunded", "PartiallyRefunded":
		return "badge ok"
	case "Authorised":
		return "badge open"
	case "Refused", "Cancelled", "Expired", "Error":
		return "badge off"
	}
	return "badge wait"
}
