package payments

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/yp/paysvc/shared/storeerr"
)

// Every payment's request is recorded before its call as a pending record
// under PendingKey (merchant, site, reference), with everything the
// request knows. A payment that starts with an action (3-D Secure, a
// redirect) may be answered without a pspReference (the platform's
// published answers carry only resultCode and action): its pending record
// is bound to its pspReference as soon as /payments/details or the
// AUTHORISATION notification gives it, and the record under the
// pspReference starts from the pending one. A payment's notification finds
// it too when the head's own write was lost. Nothing depends on the
// upstream echoing amount or reference (docs/payments.md).

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
	alias := Head{PSPReference: actionKey(paymentData), MerchantID: merchantID, SiteID: siteID, Reference: ref,
		Version: 1, CreatedAt: now, UpdatedAt: now}
	if err := st.Write(ctx, Write{PSP: alias.PSPReference, Put: &alias}); err != nil && !errors.Is(err, storeerr.ErrConflict) {
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

// A pending record is a head under PendingKey, with the request's facts
// and, once an action answered it, the answer's result code; the head of
// the payment starts from it once its pspReference is known (bound), and
// the pending record is marked BoundTo it.

// savePending writes pending record h (keyed h.PSPReference) before the
// payment's call, replacing an earlier payment's with the same reference:
// the latest payment started with a reference is the one its details and
// notification bind. It returns h as written.
func savePending(ctx context.Context, st Store, h Head) (Head, error) {
	// A new reference is the common case: the first attempt creates the
	// record without reading; one that exists is read and replaced.
	written, err := updateHead(ctx, st, h.PSPReference, &Head{PSPReference: h.PSPReference}, func(cur *Head) error {
		*cur = h.clone()
		return nil
	})
	if err != nil {
		return Head{}, fmt.Errorf("record pending payment %s: %w", h.Reference, err)
	}
	return written, nil
}

// answerPending records on pending record pend, as savePending wrote it,
// the result code of its payment's answer (an action without
// pspReference).
func answerPending(ctx context.Context, st Store, pend Head, resultCode string, at time.Time) error {
	return updatePending(ctx, st, pend, &pend, "record pending payment "+pend.Reference, func(h *Head) bool {
		if h.BoundTo != "" {
			return false // bound since
		}
		h.answered(resultCode)
		h.UpdatedAt = later(h.UpdatedAt, at)
		return true
	})
}

// pendingFor returns the unbound (or bound to psp) pending record of the
// payment with reference ref of a site, if there is one.
func pendingFor(ctx context.Context, st Store, merchantID, siteID, ref, psp string) (Head, bool, error) {
	if ref == "" || merchantID == "" {
		return Head{}, false, nil
	}
	h, err := st.GetPayment(ctx, PendingKey(merchantID, siteID, ref))
	if errors.Is(err, storeerr.ErrNotFound) {
		return Head{}, false, nil
	}
	if err != nil {
		return Head{}, false, err
	}
	if !pendingOf(h, merchantID, siteID, psp) {
		return Head{}, false, nil
	}
	return h, true, nil
}

// pendingOf reports whether pending record h is one payment psp of the
// site may start from: the site's, and unbound or bound to psp.
func pendingOf(h Head, merchantID, siteID, psp string) bool {
	return h.MerchantID == merchantID && h.SiteID == siteID && (h.BoundTo == "" || h.BoundTo == psp)
}

// fromPending is the head of payment psp starting from its pending record.
func fromPending(pend Head, psp string) Head {
	h := pend.clone()
	h.PSPReference, h.BoundTo, h.Version, h.Totals = psp, "", 0, Totals{}
	h.Totals = h.authContribution()
	return h
}

// fillRequestFacts fills what h (a head made from an upstream answer or
// a notification) lacks from req, a head of what the merchant's request
// knew: reference, amount, flow, shopper, card storage, authorisation type
// and the earlier creation time. A known amount becoming known moves the
// Totals with the authorisation.
func fillRequestFacts(h *Head, req Head) {
	if h.Reference == "" {
		h.Reference = req.Reference
	}
	if !h.AmountKnown() && req.AmountKnown() {
		before := h.authContribution()
		h.Amount = req.Amount
		if h.AuthStatus() == StateAuthorised && h.Authorised == 0 {
			h.Authorised = h.Amount.Value
		}
		h.Totals = h.Totals.Sub(before).Add(h.authContribution())
	}
	if h.Source == "" || h.Source == SourceSessions && h.SessionID == "" {
		if req.Source != "" {
			h.Source = req.Source
		}
	}
	if h.ShopperReference == "" {
		h.ShopperReference = req.ShopperReference
	}
	if h.StoredMethodID == "" {
		h.StoredMethodID = req.StoredMethodID
	}
	h.StorePaymentMethod = h.StorePaymentMethod || req.StorePaymentMethod
	if h.AuthorisationType == "" {
		h.AuthorisationType = req.AuthorisationType
	}
	if h.CaptureMode == "" {
		h.CaptureMode = req.CaptureMode
	}
	if !req.CreatedAt.IsZero() && (h.CreatedAt.IsZero() || req.CreatedAt.Before(h.CreatedAt)) {
		h.CreatedAt = req.CreatedAt
	}
}

// boundFacts is the timeline's line of a payment that started from its
// pending record after an action answered it (once, whichever of details
// and notification binds it): none for a pending record its own answer
// binds.
func boundFacts(pend Head, at time.Time) []Fact {
	if pend.Auth.ResultCode == "" {
		return nil
	}
	return []Fact{{ID: "bound", At: at, Kind: "bound", Origin: OriginAPI, Detail: pend.Reference}}
}

// markBound records on pending record pend the pspReference its payment
// got. Its failure does not matter much: the payment's own head is
// complete.
func markBound(ctx context.Context, st Store, pend Head, psp string) error {
	if pend.BoundTo == psp {
		return nil
	}
	return updatePending(ctx, st, pend, &pend, "bind pending payment to "+psp, func(h *Head) bool {
		if h.BoundTo == psp {
			return false
		}
		h.BoundTo = psp
		return true
	})
}

// unbind undoes markBound of pending record pend to psp (a binding made
// alongside a write that then found psp another site's payment).
func unbind(ctx context.Context, st Store, pend Head, psp string) error {
	return updatePending(ctx, st, pend, nil, "unbind pending payment from "+psp, func(h *Head) bool {
		if h.BoundTo != psp {
			return false
		}
		h.BoundTo = ""
		return true
	})
}

// updatePending applies fn to pending record pend, starting from start
// (nil: read), while it is still that payment's (a later payment with the
// same reference replaces it); fn false writes nothing. what names the
// change in an error.
func updatePending(ctx context.Context, st Store, pend Head, start *Head, what string, fn func(h *Head) bool) error {
	key := PendingKey(pend.MerchantID, pend.SiteID, pend.Reference)
	_, err := updateHead(ctx, st, key, start, func(h *Head) error {
		if h.Version == 0 || !h.CreatedAt.Equal(pend.CreatedAt) || !fn(h) {
			return errSkip
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}
