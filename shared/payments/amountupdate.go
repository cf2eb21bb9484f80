package payments

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/yp/paysvc/shared/apperr"
	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/storeerr"
)

// AmountUpdateInput is a validated POST amount-updates body (its
// pspReference already checked against the path's).
type AmountUpdateInput struct {
	Amount    money.Amount
	Reference string
}

// maxAmountUpdates bounds the amount updates of one payment (the head
// keeps each one, to know the amount before a later one fails).
const maxAmountUpdates = 50

// UpdateAmount changes the authorised amount of a pre-authorisation not
// yet captured (docs/openapi.yaml). Its request is written before the
// upstream call (captures and other amount updates of the payment wait
// while it is in flight, so the record ends on the amount the platform
// ends on); the accepted amount is the authorised amount from its answer,
// until a failed AUTHORISATION_ADJUSTMENT restores the one before.
func (s *Service) UpdateAmount(ctx context.Context, c *Call, psp string, in AmountUpdateInput) (ModificationResult, error) {
	m := c.Merchant
	return s.run(ctx, c, psp, operation{kind: OpAmountUpdate,
		call: ModificationRequest{MerchantAccount: m.UpstreamAccount, Amount: in.Amount, Reference: in.Reference,
			Splits: splits(m, in.Amount, cmp.Or(in.Reference, psp))},
		expect: Expect{Authorised: true, NoReversal: true, NoAmountUpdate: true, NotReleased: true, PreAuth: true, Uncaptured: true,
			Currency: in.Amount.Currency},
		why:    func(h Head) error { return amountUpdateRefusal(h, in) },
		failed: apperr.AmountUpdateFailed, what: "amount update", readAlong: true})
}

// amountUpdateRefusal is why head h cannot take amount update in (nil: it
// could now).
func amountUpdateRefusal(h Head, in AmountUpdateInput) error {
	v := h.View()
	switch {
	case h.AuthorisationType != AuthorisationPreAuth:
		return apperr.InvalidField("pspReference",
			"the payment is not a pre-authorisation: only a payment started with additionalData.authorisationType PreAuth can have its amount updated")
	case v.State != StateAuthorised || h.Totals.Captured > 0 || h.Totals.CapturesInFlight > 0:
		return apperr.Newf(apperr.Invalid, "the amount of a payment in state %s cannot be updated (only authorised, not yet captured)", v.State)
	case h.AmountKnown() && in.Amount.Currency != h.Amount.Currency:
		return apperr.InvalidField("amount.currency", "must be the payment's currency, "+h.Amount.Currency)
	case len(h.AmountUpdates) >= maxAmountUpdates:
		return apperr.Newf(apperr.Invalid, "a payment's amount can be updated at most %d times", maxAmountUpdates)
	}
	return nil
}

// answerAmountUpdate records the platform's answer to amount update ref
// of payment psp: accepted, its amount becomes the authorised amount (the
// head changes with the entry, one write conditional on both). The first
// attempt starts from entry, as the request wrote it, when set (no entry
// under mod yet), and from head, read after it was written, when set (a
// conflict reads both again).
func answerAmountUpdate(ctx context.Context, st Store, psp, ref, mod string, a Answer, entry *Entry, head *Head) error {
	for attempt := 1; ; attempt++ {
		var h Head
		var err error
		if attempt == 1 && head != nil {
			h = *head
		} else {
			h, err = st.GetPayment(ctx, psp)
		}
		if errors.Is(err, storeerr.ErrNotFound) {
			return fmt.Errorf("%w: payment %s unknown", errRefused, psp)
		}
		if err != nil {
			return fmt.Errorf("read payment %s: %w", psp, err)
		}
		var op, canon Entry
		var found bool
		if attempt == 1 && entry != nil {
			op = *entry
		} else if op, canon, found, err = readOperation(ctx, st, psp, ref, mod); err != nil {
			return err
		}
		if op.Ref == "" {
			return fmt.Errorf("%w: no request of operation %s of payment %s is recorded", errRefused, ref, psp)
		}
		if !op.AwaitsAnswer() {
			return nil // answered before
		}
		answered := op
		answered.Answered, answered.Version = &a, op.Version+1
		w := Write{PSP: psp}
		if a.Outcome == Received && mod != "" {
			alias := Entry{Ref: op.Ref, Kind: op.Kind, MergedInto: mod, Version: op.Version + 1}
			answered.Ref, answered.Modification, answered.Version = mod, mod, 1
			if found {
				answered.Notices, answered.Version = canon.Notices, canon.Version+1
			}
			w.Entries = []Entry{alias, answered}
		} else {
			w.Entries = []Entry{answered}
		}
		next := h
		next.Totals = h.Totals.Add(answered.Contribution()).Sub(op.Contribution()).Sub(canon.Contribution())
		if answered.status() == opSucceeded && !h.amountUpdated(mod) {
			next = next.withAmountUpdate(AmountUpdate{Ref: mod, Amount: answered.Requested.Amount.Value, From: h.Authorised})
		}
		next.Version, next.UpdatedAt = h.Version+1, later(h.UpdatedAt, a.At)
		w.Put = &next
		w.Facts = []Fact{answeredFact(answered)}
		if done, err := retrySettle(ctx, st.Write(ctx, w), attempt, "answer "+ref+" of "+psp); done {
			return err
		}
	}
}

// amountUpdated reports whether amount update mod is applied to the head.
func (h Head) amountUpdated(mod string) bool {
	return slices.ContainsFunc(h.AmountUpdates, func(u AmountUpdate) bool { return u.Ref == mod })
}

// withAmountUpdate returns h with accepted amount update u applied: the
// authorised amount is u's, and what can be captured moves with it.
func (h Head) withAmountUpdate(u AmountUpdate) Head {
	h.AmountUpdates = append(append([]AmountUpdate(nil), h.AmountUpdates...), u)
	return h.reauthorised(u.Amount)
}

// withAmountUpdateFailed returns h with amount update mod reported failed:
// the authorised amount is the latest other accepted update's, else the
// amount before the first.
func (h Head) withAmountUpdateFailed(mod string) Head {
	updates := append([]AmountUpdate(nil), h.AmountUpdates...)
	authorised := h.Authorised
	for i := range updates {
		if updates[i].Ref == mod {
			updates[i].Failed = true
		}
	}
	if len(updates) > 0 {
		authorised = updates[0].From
		for _, u := range updates {
			if !u.Failed {
				authorised = u.Amount
			}
		}
	}
	h.AmountUpdates = updates
	return h.reauthorised(authorised)
}

// reauthorised returns h with authorised amount v, its Totals moved with it.
func (h Head) reauthorised(v int64) Head {
	before := h.authContribution()
	h.Authorised = v
	h.Totals = h.Totals.Sub(before).Add(h.authContribution())
	return h
}
