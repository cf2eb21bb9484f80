package simulator

import (
	"fmt"
	"net/url"

	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/upstream"
)

// amountIn is an amount as received (value may be missing).
type amountIn struct {
	Value    *int64 `json:"value"`
	Currency string `json:"currency"`
}

// splitIn is a split as received.
type splitIn struct {
	Account     string    `json:"account"`
	Amount      *amountIn `json:"amount"`
	Type        string    `json:"type"`
	Reference   string    `json:"reference"`
	Description string    `json:"description"`
}

// checkAmount validates a required amount.
func checkAmount(a *amountIn, allowZero bool) (money.Amount, *apiError) {
	if a == nil || a.Value == nil {
		return money.Amount{}, validationError(codeMissingAmount, "Required field 'amount' is not provided.")
	}
	if a.Currency == "" || !money.ValidCurrency(a.Currency) {
		return money.Amount{}, validationError(codeBadCurrency, "Unsupported currency specified")
	}
	v := *a.Value
	if v < 0 || v > money.MaxValue || (v == 0 && !allowZero) {
		return money.Amount{}, validationError(codeInvalidAmount, "Invalid amount specified")
	}
	return money.Amount{Value: v, Currency: a.Currency}, nil
}

// checkReference validates the merchant reference of a payment or session.
func checkReference(ref string) *apiError {
	if ref == "" {
		return validationError(codeMissingRef, "Required field 'reference' is not provided.")
	}
	if len(ref) > 80 {
		return validationError(codeMissingRef, "Field 'reference' exceeds 80 characters.")
	}
	return nil
}

// checkReturnURL validates returnUrl (required, absolute).
func checkReturnURL(u string) *apiError {
	if u == "" {
		return validationError(codeReturnURL, "Return URL is missing.")
	}
	parsed, err := url.Parse(u)
	if err != nil || parsed.Scheme == "" || len(u) > 8000 {
		return validationError(codeReturnURL, "Return URL is invalid.")
	}
	return nil
}

// checkMetadata applies the upstream's metadata limits.
func checkMetadata(m map[string]string) *apiError {
	if len(m) > 20 {
		return validationError(codeMetadata, "Metadata size exceeds limit")
	}
	for k, v := range m {
		if len(k) > 20 || len(v) > 80 {
			return validationError(codeMetadata, fmt.Sprintf("Metadata key or value too long: %q", k))
		}
	}
	return nil
}

// checkSplits validates splits against the amount they split: every split
// has a type, amounts are non-negative and in the payment currency, and
// they sum to the amount (a Remainder split without amount takes the rest).
func checkSplits(in []splitIn, total money.Amount) ([]upstream.Split, *apiError) {
	if len(in) == 0 {
		return nil, nil
	}
	out := make([]upstream.Split, 0, len(in))
	var sum int64
	remainder := false
	for i, sp := range in {
		if sp.Type == "" {
			return nil, validationError(codeGeneric, fmt.Sprintf("Required field 'splits[%d].type' is not provided.", i))
		}
		s := upstream.Split{Account: sp.Account, Type: sp.Type, Reference: sp.Reference, Description: sp.Description}
		if sp.Amount == nil || sp.Amount.Value == nil {
			if sp.Type != upstream.SplitRemainder {
				return nil, validationError(codeGeneric, fmt.Sprintf("Required field 'splits[%d].amount' is not provided.", i))
			}
			remainder = true
			out = append(out, s)
			continue
		}
		if sp.Amount.Currency != "" && sp.Amount.Currency != total.Currency {
			return nil, validationError(codeGeneric, fmt.Sprintf("Split currency %s does not match the payment currency %s.", sp.Amount.Currency, total.Currency))
		}
		if *sp.Amount.Value < 0 {
			return nil, validationError(codeGeneric, fmt.Sprintf("Invalid amount in splits[%d].", i))
		}
		if (sp.Type == upstream.SplitBalanceAccount || sp.Type == upstream.SplitCommission) && sp.Account == "" {
			return nil, validationError(codeGeneric, fmt.Sprintf("Required field 'splits[%d].account' is not provided.", i))
		}
		sum += *sp.Amount.Value
		s.Amount = &upstream.SplitAmount{Value: *sp.Amount.Value, Currency: sp.Amount.Currency}
		out = append(out, s)
	}
	if sum > total.Value || (!remainder && sum != total.Value) {
		return nil, validationError(codeGeneric, fmt.Sprintf("The sum of the split amounts (%d) does not equal the amount (%d %s).", sum, total.Value, total.Currency))
	}
	return out, nil
}
