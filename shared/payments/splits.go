package payments

import (
	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/upstream"
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
func Splits(m tenant.Merchant, a money.Amount, reference string) []upstream.Split {
	if a.Value == 0 {
		return nil
	}
	c := Commission(m, a.Value)
	// The splits and their amounts in one allocation.
	buf := new(struct {
		splits  [2]upstream.Split
		amounts [2]upstream.SplitAmount
	})
	out := buf.splits[:0]
	if rest := a.Value - c; rest > 0 {
		buf.amounts[0] = upstream.SplitAmount{Value: rest, Currency: a.Currency}
		out = append(out, upstream.Split{
			Type: upstream.SplitBalanceAccount, Account: m.SplitAccount, Amount: &buf.amounts[0],
			Reference: splitRef(reference, "merchant"), Description: "Merchant share",
		})
	}
	if c > 0 {
		buf.amounts[1] = upstream.SplitAmount{Value: c, Currency: a.Currency}
		out = append(out, upstream.Split{
			Type: upstream.SplitCommission, Account: m.CommissionAccount, Amount: &buf.amounts[1],
			Reference: splitRef(reference, "commission"), Description: "Platform commission",
		})
	}
	return out
}

func splitRef(ref, part string) string {
	r := ref + "-" + part
	if len(r) > 80 {
		r = r[len(r)-80:]
	}
	return r
}
