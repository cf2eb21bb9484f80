package payments

import (
	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/tenant"
)

// Commission returns the platform's cut of value for merchant m: basis
// points (rounded down, in the merchant's favour) plus the fixed part,
// never more than value.
func Commission(m tenant.Merchant, value int64) int64 {
	c := value*m.CommissionBps/10_000 + m.CommissionFixed
	return min(max(c, 0), value)
}

// Splits returns the split instructions for an amount: the merchant's
// balance account gets amount − commission, the platform the commission.
// They always sum to the amount. A zero amount has no splits.
func Splits(m tenant.Merchant, a money.Amount, reference string) []Split {
	if a.Value == 0 {
		return nil
	}
	c := Commission(m, a.Value)
	out := make([]Split, 0, 2)
	merchantRef, commissionRef := splitRefs(reference)
	if rest := a.Value - c; rest > 0 {
		out = append(out, Split{Kind: SplitMerchant, Account: m.SplitAccount, Value: rest, Currency: a.Currency,
			Reference: merchantRef, Description: "Merchant share"})
	}
	if c > 0 {
		out = append(out, Split{Kind: SplitCommission, Account: m.CommissionAccount, Value: c, Currency: a.Currency,
			Reference: commissionRef, Description: "Platform commission"})
	}
	return out
}

// splitRefs are the references of the merchant's and the commission's
// parts: ref + "-merchant" and ref + "-commission", each at most 80
// characters (the end kept), made in one allocation.
func splitRefs(ref string) (merchant, commission string) {
	both := ref + "-merchant" + ref + "-commission"
	n := len(ref) + len("-merchant")
	return last80(both[:n]), last80(both[n:])
}

func last80(r string) string {
	if len(r) > 80 {
		r = r[len(r)-80:]
	}
	return r
}
