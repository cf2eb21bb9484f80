package payments

// AlwaysBlocked are the payment methods never offered on sessions (docs/payments.md).
var AlwaysBlocked = []string{"sepadirectdebit", "bacs", "directdebit_GB"}

// mergeBlocked returns AlwaysBlocked ∪ extra, without duplicates, in order.
func mergeBlocked(extra []string) []string {
	out := make([]string, 0, len(AlwaysBlocked)+len(extra))
	seen := make(map[string]bool, cap(out))
	for _, list := range [][]string{AlwaysBlocked, extra} {
		for _, m := range list {
			if !seen[m] {
				seen[m] = true
				out = append(out, m)
			}
		}
	}
	return out
}
