package payments_test

import (
	"errors"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/storeerr"
)

// Write.ApplyTo checks a write's conditions as the stores do and makes it
// on a whole ledger in memory (the bridge release's records).
func TestWriteApplyTo(t *testing.T) {
	at := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	head := payments.Head{PSPReference: "P1", MerchantID: "m_a", Amount: money.Amount{Value: 1000, Currency: "EUR"},
		Auth: payments.Auth{ResultCode: "Authorised"}, Authorised: 1000, Version: 3, UpdatedAt: at}
	head.Totals = payments.Fold(head, nil)
	base := payments.Ledger{Head: head, Found: true,
		Entries: []payments.Entry{{Ref: "op_1", Kind: payments.OpCapture, Version: 1,
			Requested: &payments.Request{Amount: money.Amount{Value: 100, Currency: "EUR"}, At: at}}},
		Facts: []payments.Fact{{ID: "payment", At: at}}}
	base.Head.Totals = payments.Fold(base.Head, base.Entries)
	capturable := func(v int64) *int64 { return &v }
	newCapture := payments.Entry{Ref: "op_2", Kind: payments.OpCapture, Version: 1,
		Requested: &payments.Request{Amount: money.Amount{Value: 500, Currency: "EUR"}, At: at}}
	put := head
	put.Version = 4
	for _, tc := range []struct {
		name     string
		l        payments.Ledger
		w        payments.Write
		conflict bool
		check    func(t *testing.T, got payments.Ledger)
	}{
		{"a delta within the guard", base, payments.Write{PSP: "P1", Delta: newCapture.Contribution(), SeqStep: 1, At: at.Add(time.Second),
			Expect: payments.Expect{MerchantID: "m_a", Capturable: capturable(500)}, Entries: []payments.Entry{newCapture},
			Facts: []payments.Fact{{ID: "op_2#requested"}, {ID: "payment"}}}, false,
			func(t *testing.T, got payments.Ledger) {
				if got.Head.Version != 4 || got.Head.Seq != 1 || !got.Head.UpdatedAt.Equal(at.Add(time.Second)) ||
					got.Head.Totals != payments.Fold(got.Head, got.Entries) || len(got.Entries) != 2 || len(got.Facts) != 2 {
					t.Fatalf("got %+v", got)
				}
			}},
		{"a delta over the guard", base, payments.Write{PSP: "P1", Expect: payments.Expect{Capturable: capturable(901)}}, true, nil},
		{"a delta of another merchant", base, payments.Write{PSP: "P1", Expect: payments.Expect{MerchantID: "m_b"}}, true, nil},
		{"a delta on no payment", payments.Ledger{}, payments.Write{PSP: "P1"}, true, nil},
		{"a put of the next version", base, payments.Write{PSP: "P1", Put: &put}, false,
			func(t *testing.T, got payments.Ledger) {
				if got.Head.Version != 4 || len(got.Entries) != 1 {
					t.Fatalf("got %+v", got)
				}
			}},
		{"a put of a stale version", base, payments.Write{PSP: "P1", Put: &head}, true, nil},
		{"a create over a payment", base, payments.Write{PSP: "P1", Put: &payments.Head{Version: 1}}, true, nil},
		{"a create", payments.Ledger{}, payments.Write{PSP: "P1", Put: &payments.Head{PSPReference: "P1", Version: 1}}, false,
			func(t *testing.T, got payments.Ledger) {
				if !got.Found || got.Head.Version != 1 {
					t.Fatalf("got %+v", got)
				}
			}},
		{"an entry's next version", base, payments.Write{PSP: "P1", Entries: []payments.Entry{{Ref: "op_1", Version: 2}}}, false,
			func(t *testing.T, got payments.Ledger) {
				if len(got.Entries) != 1 || got.Entries[0].Version != 2 || base.Entries[0].Version != 1 {
					t.Fatalf("got %+v (the ledger read changed: %+v)", got.Entries, base.Entries)
				}
			}},
		{"an entry's stale version", base, payments.Write{PSP: "P1", Entries: []payments.Entry{{Ref: "op_1", Version: 1}}}, true, nil},
		{"an entry not stored, at version 2", base, payments.Write{PSP: "P1", Entries: []payments.Entry{{Ref: "op_3", Version: 2}}}, true, nil},
	} {
		got, err := tc.w.ApplyTo(tc.l)
		if tc.conflict {
			if !errors.Is(err, storeerr.ErrConflict) {
				t.Errorf("%s: %v, want a conflict", tc.name, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		tc.check(t, got)
	}
}
