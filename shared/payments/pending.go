package payments

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/yp/paysvc/shared/storeerr"
)

// A payment that starts with an action (3-D Secure, a redirect) may be
// answered without a pspReference: the platform's published answers carry
// only resultCode and action. Such a payment is recorded at once as a
// pending record under PendingKey (merchant, site, reference), with
// everything the request knew, and bound to its pspReference as soon as
// /payments/details or the AUTHORISATION notification gives it: the record
// under the pspReference then starts from the pending one. Nothing depends
// on the upstream echoing amount or reference (docs/payments.md).

// pendingPrefix starts every pending key; no pspReference starts with it.
const pendingPrefix = "pending_"

// PendingKey is the store key of the pending record of the payment with
// reference ref of a site.
func PendingKey(merchantID, siteID, ref string) string {
	h := sha256.Sum256([]byte(merchantID + "\x00" + siteID + "\x00" + ref))
	return pendingPrefix + hex.EncodeToString(h[:20])
}

// actionKey is the store key of the alias that leads from an action's
// paymentData to its payment's pending record: a component that sends the
// paymentData back with the details binds the payment without the
// reference.
func actionKey(paymentData string) string {
	h := sha256.Sum256([]byte(paymentData))
	return pendingPrefix + "action_" + hex.EncodeToString(h[:20])
}

// saveActionAlias records that the action with paymentData belongs to the
// payment with reference ref of a site (no paymentData: nothing). The alias
// is written once; writing it again changes nothing.
func saveActionAlias(ctx context.Context, st Store, merchantID, siteID, ref, paymentData string, now time.Time) error {
	if paymentData == "" || ref == "" {
		return nil
	}
	alias := Payment{PSPReference: actionKey(paymentData), MerchantID: merchantID, SiteID: siteID, Reference: ref,
		Version: 1, CreatedAt: now, UpdatedAt: now}
	if err := st.SavePayment(ctx, alias, 0); err != nil && !errors.Is(err, storeerr.ErrConflict) {
		return fmt.Errorf("record action of %s: %w", ref, err)
	}
	return nil
}

// referenceOfAction returns the reference of the payment an action's
// paymentData belongs to, on this site ("" when unknown).
func (s *Service) referenceOfAction(ctx context.Context, merchantID, siteID, paymentData string) (string, error) {
	if paymentData == "" {
		return "", nil
	}
	a, err := s.store.GetPayment(ctx, actionKey(paymentData))
	if errors.Is(err, storeerr.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read action: %w", err)
	}
	if a.MerchantID != merchantID || a.SiteID != siteID {
		return "", nil
	}
	return a.Reference, nil
}

// IsPendingKey reports whether key names a pending record rather than a
// payment.
func IsPendingKey(key string) bool { return strings.HasPrefix(key, pendingPrefix) }

// kindBound is the history entry of a record that took over a pending one
// (Detail: the pending key).
const kindBound = "bound"

// Internal reports whether e is the service's own bookkeeping rather than
// an operation or notification of the payment: the entry recording that
// the record took over a pending one (its Detail is the internal pending
// key). Views for merchants leave such entries out.
func (e Event) Internal() bool { return e.Kind == kindBound }

// savePending writes the pending record p (keyed by PendingKey), replacing
// an earlier payment's with the same reference: the latest payment started
// with a reference is the one its details and notification bind. The same
// record written again once its payment is bound (a repeated update) stays
// as it is.
func savePending(ctx context.Context, st Store, p Payment) error {
	key := PendingKey(p.MerchantID, p.SiteID, p.Reference)
	_, err := Mutate(ctx, st, key, func() Payment { return p }, func(cur *Payment) error {
		if cur.Version == 0 {
			return nil
		}
		if cur.BoundTo != "" && cur.CreatedAt.Equal(p.CreatedAt) && cur.Amount == p.Amount {
			return ErrSkip // this payment's, bound since
		}
		v := cur.Version
		*cur = clonePayment(p)
		cur.PSPReference, cur.Version = key, v
		return nil
	})
	if err != nil {
		return fmt.Errorf("record pending payment %s: %w", p.Reference, err)
	}
	return nil
}

// pendingFor returns the unbound (or bound to psp) pending record of the
// payment with reference ref of a site, if there is one.
func pendingFor(ctx context.Context, st Store, merchantID, siteID, ref, psp string) (Payment, bool, error) {
	if ref == "" || merchantID == "" {
		return Payment{}, false, nil
	}
	p, err := st.GetPayment(ctx, PendingKey(merchantID, siteID, ref))
	if errors.Is(err, storeerr.ErrNotFound) {
		return Payment{}, false, nil
	}
	if err != nil {
		return Payment{}, false, err
	}
	if p.MerchantID != merchantID || p.SiteID != siteID || (p.BoundTo != "" && p.BoundTo != psp) {
		return Payment{}, false, nil
	}
	return p, true, nil
}

// fromPending is the record of payment psp starting from its pending record.
func fromPending(pend Payment, psp string) Payment {
	p := clonePayment(pend)
	p.PSPReference, p.BoundTo, p.Version = psp, "", 0
	p.History = append(p.History, Event{At: pend.UpdatedAt, Kind: kindBound, Origin: OriginAPI, PSPReference: psp,
		Detail: PendingKey(pend.MerchantID, pend.SiteID, pend.Reference)})
	return p
}

// mergePending fills what p (a record made from an upstream answer or a
// notification) lacks from its pending record, once.
func mergePending(p *Payment, pend Payment) {
	key := PendingKey(pend.MerchantID, pend.SiteID, pend.Reference)
	for _, e := range p.History {
		if e.Kind == kindBound && e.Detail == key {
			return
		}
	}
	fillRequestFacts(p, pend)
	history := append([]Event(nil), pend.History...)
	history = append(history, Event{At: pend.UpdatedAt, Kind: kindBound, Origin: OriginAPI, PSPReference: p.PSPReference, Detail: key})
	p.History = append(history, p.History...)
}

// fillRequestFacts fills what p (a record made from an upstream answer or
// a notification) lacks from req, a record of what the merchant's request
// knew: reference, amount, flow, shopper, card storage, authorisation type
// and the earlier creation time.
func fillRequestFacts(p *Payment, req Payment) {
	if p.Reference == "" {
		p.Reference = req.Reference
	}
	if p.Amount.Currency == "" || p.Amount.Value == 0 && p.AuthorisedValue == 0 {
		p.Amount = req.Amount
	}
	if p.Source == "" || p.Source == SourceSessions && p.SessionID == "" {
		p.Source = req.Source
	}
	if p.ShopperReference == "" {
		p.ShopperReference = req.ShopperReference
	}
	if p.StoredMethodID == "" {
		p.StoredMethodID = req.StoredMethodID
	}
	p.StorePaymentMethod = p.StorePaymentMethod || req.StorePaymentMethod
	if p.AuthorisationType == "" {
		p.AuthorisationType = req.AuthorisationType
	}
	if !req.CreatedAt.IsZero() && (p.CreatedAt.IsZero() || req.CreatedAt.Before(p.CreatedAt)) {
		p.CreatedAt = req.CreatedAt
	}
}

// markBound records on a pending record the pspReference its payment got.
// Its failure does not matter much: the payment's own record is complete.
func markBound(ctx context.Context, st Store, pend Payment, psp string) error {
	if pend.BoundTo == psp {
		return nil
	}
	_, err := MutateFrom(ctx, st, pend, func(p *Payment) error {
		if p.BoundTo == psp {
			return ErrSkip
		}
		p.BoundTo = psp
		return nil
	})
	if err != nil {
		return fmt.Errorf("bind pending payment to %s: %w", psp, err)
	}
	return nil
}

// mayHavePending reports whether a record could still take over a pending
// one: not when it did already, when /payments answered with its
// pspReference, or when it is a session's payment.
func (p *Payment) mayHavePending() bool {
	if p.SessionID != "" {
		return false
	}
	for _, e := range p.History {
		if e.Kind == kindBound || e.Origin == OriginAPI && e.Kind == "payment" && e.PSPReference != "" {
			return false
		}
	}
	return true
}
