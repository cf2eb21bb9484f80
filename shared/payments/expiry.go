package payments

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/yp/paysvc/shared/storeerr"
	"github.com/yp/paysvc/shared/tenant"
)

// Authorisation expiry (docs/expiry.md). The platform expires an
// uncaptured authorisation on its own and sends EXPIRE for the remainder;
// none of its answers or webhooks says beforehand when (Checkout v71 and
// Webhooks-v1 carry no authorisation expiry date). So the service states
// it from the platform's published validity per payment method, counted
// from when the authorisation became Authorised (Head.AuthorisedAt).

// expirySourceTable names where an expiry time comes from: the method
// table below.
const expirySourceTable = "table"

// validity is one row of the method table: how long the platform keeps an
// authorisation of these methods capturable (0: the method is captured at
// authorisation, whatever is asked).
type validity struct {
	methods []string
	period  time.Duration
}

const day = 24 * time.Hour

// validities is the method table, mirrored in docs/expiry.md. Sources:
// adyen.help 115001179684 "Which payment methods support separate
// authorisation and capture?" (28 days for the major card networks, 12 for
// Cartes Bancaires, PayPal captures "only guaranteed for three days");
// adyen.help 360014105559 (Klarna: "default authorisation time is 28
// days"); the methods not on that page are captured at authorisation.
var validities = []validity{
	{[]string{"cartebancaire"}, 12 * day},
	{[]string{"paypal"}, 3 * day},
	{[]string{"ideal", "bcmc", "bcmc_mobile", "twint", "swish", "blik", "mobilepay", "trustly", "eps", "giropay",
		"vipps", "sepadirectdebit", "directdebit_GB"}, 0},
}

// defaultValidity is every other method's: cards (and wallets on cards),
// Klarna and the other open-invoice methods, and methods not in the table.
const defaultValidity = 28 * day

// authorisationValidity is how long an authorisation of payment method pm
// stays capturable; false for a method captured at authorisation.
func authorisationValidity(pm string) (time.Duration, bool) {
	for _, v := range validities {
		for _, m := range v.methods {
			if strings.EqualFold(m, pm) {
				return v.period, v.period > 0
			}
		}
	}
	return defaultValidity, true
}

// AuthorisationExpiry is when the platform expires payment h's uncaptured
// remainder, and where that time comes from ("table"); ok is false when
// nothing can expire: nothing is capturable (captured, released, not
// authorised), the merchant captures at once, or the method is captured at
// authorisation.
func (h Head) AuthorisationExpiry() (at time.Time, source string, ok bool) {
	if h.AuthorisedAt.IsZero() || h.CaptureMode == tenant.CaptureAuto || h.View().Capturable == 0 {
		return time.Time{}, "", false
	}
	d, ok := authorisationValidity(h.PaymentMethod)
	if !ok {
		return time.Time{}, "", false
	}
	return h.AuthorisedAt.Add(d), expirySourceTable, true
}

// ExpiryDue is the time payment h is indexed by for its pre-expiry notice
// (its AuthorisationExpiry), and false when it is not in the index: the
// notice was sent or is not needed, or nothing can expire. The stores
// index heads as they write them; a head that left the index by a Delta
// (a capture) stays until ExpiryNotices reads it and drops it.
func (h Head) ExpiryDue() (time.Time, bool) {
	if h.ExpiryNoticeDone || h.BoundTo != "" || IsPendingKey(h.PSPReference) {
		return time.Time{}, false
	}
	at, _, ok := h.AuthorisationExpiry()
	return at, ok
}

// stampAuthorised records when the authorisation became Authorised (at,
// the answer's or the notification's arrival), once.
func (h *Head) stampAuthorised(at time.Time) {
	if h.AuthorisedAt.IsZero() && h.AuthStatus() == StateAuthorised {
		h.AuthorisedAt = at.UTC()
	}
}

// eventAuthorisationExpiring is the service event sent before an
// authorisation expires (docs/webhooks.md "Service events").
const eventAuthorisationExpiring = "paysvc.authorisation.expiring"

// ExpiryNotices sends the pre-expiry notice of at most limit payments of
// index idx whose authorisation expires before now+lead: for each, the
// head is read; while it still qualifies (ExpiryDue) the notice is built
// and emitted (emit stores, signs and delivers it; the same notice emitted
// twice is stored once), then the head is marked ExpiryNoticeDone, which
// takes it out of the index. A head that no longer qualifies (captured,
// cancelled, expired) is dropped from the index without a notice. An emit
// failure leaves the payment for the next pass; the errors are returned
// joined.
func (s *Service) ExpiryNotices(ctx context.Context, idx interface {
	Expiring(ctx context.Context, before time.Time, limit int) ([]string, error)
}, lead time.Duration, limit int, emit func(context.Context, Notification) error) (sent, dropped int, err error) {
	now := s.clock.Now()
	psps, err := idx.Expiring(ctx, now.Add(lead), limit)
	if err != nil {
		return 0, 0, fmt.Errorf("list expiring authorisations: %w", err)
	}
	var errs []error
	for _, psp := range psps {
		if ctx.Err() != nil {
			break // the pass's time is up: the rest waits for the next
		}
		did, err := s.expiryNotice(ctx, psp, now, lead, emit)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("expiry notice of %s: %w", psp, err))
		case did == noticeSent:
			sent++
		case did == noticeDropped:
			dropped++
		}
	}
	return sent, dropped, errors.Join(errs...)
}

// What expiryNotice did with an index entry: sent the notice, dropped the
// entry (no notice needed), or left it (not due yet, or its payment gone).
const (
	noticeLeft = iota
	noticeSent
	noticeDropped
)

// expiryNotice is ExpiryNotices for payment psp.
func (s *Service) expiryNotice(ctx context.Context, psp string, now time.Time, lead time.Duration,
	emit func(context.Context, Notification) error) (int, error) {
	h, err := s.store.GetPayment(ctx, psp)
	if errors.Is(err, storeerr.ErrNotFound) {
		return noticeLeft, nil
	}
	if err != nil {
		return noticeLeft, err
	}
	at, due := h.ExpiryDue()
	did := noticeDropped
	switch {
	case due && at.After(now.Add(lead)):
		return noticeLeft, nil // not due yet (an entry read before its head moved on)
	case due && at.After(now):
		if err := emit(ctx, expiringNotice(h, at, now)); err != nil {
			return noticeLeft, err
		}
		did = noticeSent
	}
	_, err = updateHead(ctx, s.store, psp, &h, func(h *Head) error {
		if h.ExpiryNoticeDone {
			return errSkip
		}
		h.ExpiryNoticeDone = true
		return nil
	})
	return did, err
}

// expiringNotice is the paysvc.authorisation.expiring service event of
// payment h, whose authorisation expires at `at`, emitted at now: the
// amount is what is still capturable.
func expiringNotice(h Head, at, now time.Time) Notification {
	amt := h.Amount
	amt.Value = h.View().Capturable
	return Notification{EventCode: eventAuthorisationExpiring, PSPReference: h.PSPReference,
		MerchantReference: h.Reference, Amount: amt, PaymentMethod: h.PaymentMethod, Success: "true",
		EventDate: now.UTC().Format(time.RFC3339),
		AdditionalData: map[string]string{"authorisationExpiresAt": at.UTC().Format(time.RFC3339),
			"authorisationExpirySource": expirySourceTable}}
}

// serviceEvent reports whether code names one of the service's own events
// (paysvc.<subject>.<event>, docs/webhooks.md "Service events"): never a
// platform code, which are upper case.
func serviceEvent(code string) bool { return strings.HasPrefix(code, "paysvc.") }

// informational applies a service event to payment h: a timeline fact and
// the next sequence number; no money moves.
func informational(h Head, item Notification, opts NotificationOptions) NotificationResult {
	read := h.Seq
	w := Write{PSP: h.PSPReference, SeqStep: 1, Expect: Expect{Seq: &read}, At: opts.Now,
		Facts: []Fact{notificationFact(item, read+1, opts.Now)}}
	return NotificationResult{Head: w.Apply(h), Applied: true, Seq: read + 1, Write: &w}
}
