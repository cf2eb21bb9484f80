package payments

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/storeerr"
	"github.com/yp/paysvc/shared/tenant"
)

// This file applies the platform's notifications to payments
// (docs/payments.md, docs/webhooks.md). The AUTHORISATION (and
// OFFER_CLOSED) is the head's; every other notification is a fact of its
// operation's entry — the entry under the operation's own pspReference,
// which the notification carries — made if the service has none yet (an
// operation made on the platform, or one whose answer is not recorded
// yet: the answer merges into it then). Any order of notifications and
// answers gives the same ledger. Each notification applied gets the
// payment's next sequence number, which its webhooks carry.

// Notification is one item of the platform's notifications, as the domain
// reads it: the upstream adapter translates the wire item to it (and back,
// for storage and the merchants' webhooks, which carry the item as the
// platform sent it).
type Notification struct {
	EventCode         string
	PSPReference      string
	OriginalReference string
	// OriginalPSP is RECURRING_CONTRACT's name of the payment (its
	// schema's originalPsp).
	OriginalPSP         string
	MerchantAccountCode string
	MerchantReference   string
	Amount              money.Amount
	EventDate           string
	PaymentMethod       string
	Reason              string
	// Success is "true" or "false", as sent (Succeeded).
	Success        string
	Operations     []string
	AdditionalData map[string]string
}

// Succeeded reports whether the item reports a success.
func (n Notification) Succeeded() bool { return n.Success == "true" }

// Payment returns the pspReference of the payment n is about: its own
// for the head's codes (AUTHORISATION, OFFER_CLOSED), else the
// originalReference (originalPsp: RECURRING_CONTRACT's), else its own
// (EXPIRE, and disputes' items without one).
func (n Notification) Payment() string {
	if CodeOf(n.EventCode).head() {
		return n.PSPReference
	}
	return cmp.Or(n.OriginalReference, n.OriginalPSP, n.PSPReference)
}

// EntryRef is the entry n is a fact of: "" for the head's own
// (AUTHORISATION, OFFER_CLOSED); the item's own pspReference where it
// names the payment apart (a modification's, a dispute's, a token's);
// else the payment's own entry of its code's kind ("expiry", "dispute",
// "notice", …: no platform reference is spelled so).
func (n Notification) EntryRef() string {
	c := CodeOf(n.EventCode)
	switch {
	case c.head():
		return ""
	case n.OriginalReference != "" && n.OriginalReference != n.PSPReference, n.OriginalPSP != "":
		return n.PSPReference
	}
	return string(c.kind)
}

// Recapture reports the platform's capture again of a capture that failed:
// CAPTURE, success, reason "Transaction Recaptured" or "Transaction
// Auto-recaptured" (online-payments/capture/failure-reasons, "Technical
// issue"). It is a fact of its own, sent after the CAPTURE_FAILED, on the
// capture's pspReference: not a duplicate of the first CAPTURE.
func (n Notification) Recapture() bool {
	r := strings.ToLower(n.Reason)
	return n.EventCode == eventCapture && n.Succeeded() &&
		(strings.HasPrefix(r, "transaction recaptured") || strings.HasPrefix(r, "transaction auto-recaptured"))
}

// Authorisation reports an AUTHORISATION item.
func (n Notification) Authorisation() bool { return n.EventCode == eventAuthorisation }

// Entries of a notification's AdditionalData the service reads.
const (
	// KeyHMACSignature is the item's signature: checked on arrival, never
	// forwarded.
	KeyHMACSignature = "hmacSignature"
	// keyModificationAction is "cancel" or "refund" on CANCEL_OR_REFUND.
	keyModificationAction = "modification.action"
	// keyStoredPaymentMethodID is the token a tokenising payment created;
	// keyRecurringDetailReference its legacy name.
	keyStoredPaymentMethodID    = "tokenization.storedPaymentMethodId"
	keyRecurringDetailReference = "recurring.recurringDetailReference"
	// KeyCheckoutSessionID is the session of a Sessions-flow payment.
	KeyCheckoutSessionID = "checkoutSessionId"
	// MetadataPrefix prefixes the request metadata the platform echoes
	// ("metadata.<key>": the routing metadata, MetaMerchant and others).
	MetadataPrefix = "metadata."
)

// ErrUnknownPayment: the notification's payment has no record and the
// notification cannot create one (no owner, or not an AUTHORISATION).
var ErrUnknownPayment = errors.New("payments: no record of the notification's payment")

// errAccountLevel: an account-level item (codes.go) is about no payment.
var errAccountLevel = errors.New("payments: an account-level notification is about no payment")

// NotificationOwner is who a payment first seen in a notification belongs
// to (from the routing metadata or the session record).
type NotificationOwner struct {
	MerchantID string
	SiteID     string
	Source     Source
	SessionID  string
}

// NotificationOptions are the context of one notification's application.
type NotificationOptions struct {
	Now time.Time
	// Owner lets an AUTHORISATION create the record of a payment the
	// service has not seen (Sessions flow). Nil: records are only updated.
	Owner *NotificationOwner
	// CaptureMode is the owning merchant's: an authorisation of an
	// auto-capture merchant is recorded as captured, as the API does.
	CaptureMode tenant.CaptureMode
	// MultipleCaptures is the owning merchant's setting
	// (tenant.Merchant.MultiplePartialCaptures): off, a capture known only
	// from its notification releases the remainder, as one the API makes.
	MultipleCaptures bool
}

// NotificationResult is what applying a notification item does.
type NotificationResult struct {
	Head    Head // the payment's head afterwards
	Created bool // the record is created by this notification
	Applied bool // false for a duplicate (applied before)
	// Seq is the item's sequence number in its payment (0: none).
	Seq int64
	// Write is what to write (nil: nothing).
	Write *Write
	// bound is the pending record the item binds (Saved marks it).
	bound *Head
}

// Notify applies item to its payment as read — the head rec (nil: none)
// and the entry item.EntryRef names (nil: none) — without writing: the result
// holds the write to make (conditional on what was read). st is read for
// the pending record an AUTHORISATION may bind.
func Notify(ctx context.Context, st Store, rec *Head, entry *Entry, item Notification, opts NotificationOptions) (NotificationResult, error) {
	psp := item.Payment()
	if psp == "" {
		return NotificationResult{}, fmt.Errorf("notification %s without pspReference", item.EventCode)
	}
	if CodeOf(item.EventCode).AccountLevel() {
		return NotificationResult{}, fmt.Errorf("notification %s: %w", item.EventCode, errAccountLevel)
	}
	ref := item.EntryRef()
	if ref == "" {
		return notifyHead(ctx, st, rec, item, opts)
	}
	if rec == nil {
		return NotificationResult{}, fmt.Errorf("payment %s: %w", psp, ErrUnknownPayment)
	}
	if serviceEvent(item.EventCode) {
		return informational(*rec, item, opts), nil
	}
	h := *rec
	e := Entry{Ref: ref, Kind: CodeOf(item.EventCode).kind, Modification: item.PSPReference}
	e.Releases = e.Kind == OpCapture && !opts.MultipleCaptures
	if entry != nil {
		e = *entry
	}
	if e.hasNotice(item.EventCode, item.Succeeded(), item.Recapture()) {
		return NotificationResult{Head: h}, nil // applied before
	}
	seq := h.Seq + 1
	next := e
	next.Notices = append(append([]Notice(nil), e.Notices...), Notice{Code: item.EventCode, Success: item.Succeeded(),
		Amount: item.Amount, Reason: noticeReason(item), Seq: seq, At: opts.Now})
	next.Version++
	if next.Kind == OpCapture && next.Requested == nil && h.CaptureMode == tenant.CaptureAuto {
		next.Covered = true // the authorisation counted it
	}
	w := Write{PSP: psp, Entries: []Entry{next}, Facts: []Fact{notificationFact(item, seq, opts.Now)}, At: opts.Now}
	delta := next.Contribution().Sub(e.Contribution())
	if next.Kind == OpAmountUpdate {
		after := h.clone()
		after.Totals = after.Totals.Add(delta)
		switch {
		case item.Succeeded() && !after.amountUpdated(item.PSPReference):
			after = after.withAmountUpdate(AmountUpdate{Ref: item.PSPReference, Amount: item.Amount.Value, From: after.Authorised})
		case !item.Succeeded() && after.amountUpdated(item.PSPReference):
			after = after.withAmountUpdateFailed(item.PSPReference)
		}
		after.Seq, after.Version, after.UpdatedAt = seq, h.Version+1, later(h.UpdatedAt, opts.Now)
		w.Put = &after
		h = after
	} else {
		read := h.Seq // the write is conditional on the head's Seq as read
		w.Delta, w.SeqStep, w.Expect = delta, 1, Expect{Seq: &read}
		h = w.Apply(h)
	}
	return NotificationResult{Head: h, Applied: true, Seq: seq, Write: &w}, nil
}

// noticeReason is what a notification says beyond its outcome.
func noticeReason(item Notification) string {
	if a := item.AdditionalData[keyModificationAction]; a != "" {
		return a
	}
	return item.Reason
}

// notificationFact is the timeline's line for a notification.
func notificationFact(item Notification, seq int64, now time.Time) Fact {
	ok := item.Succeeded()
	amount := item.Amount
	id := "n#" + item.EventCode + "#" + item.PSPReference + "#" + item.Success
	if item.Recapture() {
		id += "#recaptured"
	}
	return Fact{ID: id, At: now, Kind: item.EventCode,
		Origin: OriginNotification, PSPReference: item.PSPReference, Amount: &amount, Success: &ok, Detail: noticeReason(item)}
}

// notifyHead applies an AUTHORISATION or OFFER_CLOSED to the head: a
// whole head written conditionally on the one read.
func notifyHead(ctx context.Context, st Store, rec *Head, item Notification, opts NotificationOptions) (NotificationResult, error) {
	psp := item.Payment()
	var h Head
	res := NotificationResult{}
	switch {
	case rec != nil:
		h = rec.clone()
	case item.Authorisation() && opts.Owner != nil && opts.Owner.MerchantID != "":
		h = headFromNotification(item, *opts.Owner, opts)
		res.Created = true
	default:
		return NotificationResult{}, fmt.Errorf("payment %s: %w", psp, ErrUnknownPayment)
	}
	before := h
	ok := item.Succeeded()
	switch item.EventCode {
	case eventAuthorisation:
		if h.Auth.Notified != nil && *h.Auth.Notified == ok {
			return NotificationResult{Head: h}, nil // applied before
		}
		// A payment not of a session whose request's facts the head lacks
		// (made from a bare details answer, or by this notification) may
		// have a pending record holding them.
		if h.SessionID == "" && (res.Created || h.Reference == "" || !h.AmountKnown()) {
			pend, found, err := pendingFor(ctx, st, h.MerchantID, h.SiteID, cmp.Or(h.Reference, item.MerchantReference), psp)
			if err != nil {
				return NotificationResult{}, err
			}
			if found {
				fillRequestFacts(&h, pend)
				res.bound = &pend
			}
		}
		h.authorisation(item)
	case eventOfferClosed:
		if h.Auth.Expired || !ok {
			return NotificationResult{Head: h}, nil
		}
		h.Auth.Expired = true
	}
	// The entries are unchanged: only the authorisation's part moves.
	h.Totals = before.Totals.Sub(before.authContribution()).Add(h.authContribution())
	h.Seq++
	h.Version = before.Version + 1
	h.UpdatedAt = later(h.UpdatedAt, opts.Now)
	h.stampAuthorised(opts.Now)
	if res.Created {
		h.Version = 1
	}
	res.Head, res.Applied, res.Seq = h, true, h.Seq
	res.Write = &Write{PSP: psp, Put: &res.Head, Facts: []Fact{notificationFact(item, h.Seq, opts.Now)}, At: opts.Now}
	if res.bound != nil {
		res.Write.Facts = append(res.Write.Facts, boundFacts(*res.bound, opts.Now)...)
	}
	return res, nil
}

// headFromNotification is the head of a payment first seen in its
// AUTHORISATION notification.
func headFromNotification(item Notification, o NotificationOwner, opts NotificationOptions) Head {
	src := o.Source
	if src == "" {
		src = SourceSessions
	}
	return Head{PSPReference: item.Payment(), MerchantID: o.MerchantID, SiteID: o.SiteID, Reference: item.MerchantReference,
		Source: src, SessionID: o.SessionID, Amount: item.Amount, PaymentMethod: item.PaymentMethod, CaptureMode: opts.CaptureMode,
		CreatedAt: opts.Now, UpdatedAt: opts.Now}
}

// authorisation records an AUTHORISATION's outcome and what it tells of
// the payment (its amount when unknown, the stored-card token).
func (h *Head) authorisation(item Notification) {
	ad := item.AdditionalData
	ok := item.Succeeded()
	h.Auth.Notified = &ok
	if h.Reference == "" {
		h.Reference = item.MerchantReference
	}
	if !h.AmountKnown() {
		h.Amount = item.Amount
	}
	if h.PaymentMethod == "" {
		h.PaymentMethod = item.PaymentMethod
	}
	if h.SessionID == "" {
		h.SessionID = ad[KeyCheckoutSessionID]
	}
	if token := firstOf(ad, keyStoredPaymentMethodID, keyRecurringDetailReference); token != "" {
		h.StoredMethodID = token
	}
	if h.ShopperReference == "" {
		h.ShopperReference = firstOf(ad, "tokenization.shopperReference", "recurring.shopperReference", "shopperReference")
	}
	if !ok {
		h.RefusalReason = item.Reason
		return
	}
	h.RefusalReason = ""
	if h.Authorised == 0 {
		h.Authorised = item.Amount.Value
	}
}

// firstOf returns the first non-empty ad[k].
func firstOf(ad map[string]string, keys ...string) string {
	for _, k := range keys {
		if v := ad[k]; v != "" {
			return v
		}
	}
	return ""
}

// Saved finishes what Notify started once its write is made: the pending
// record the item bound is marked bound (best effort: the payment's head
// is complete).
func (r NotificationResult) Saved(ctx context.Context, st Store) {
	if r.bound != nil {
		_ = markBound(ctx, st, *r.bound, r.Head.PSPReference)
	}
}

// applyNotification applies one notification item to its payment and
// writes it, reading what it needs and retrying on a concurrent change
// (the notifications receiver reads and writes with the rest of the item
// instead: Notify).
func applyNotification(ctx context.Context, st Store, item Notification, opts NotificationOptions) (NotificationResult, error) {
	psp := item.Payment()
	for attempt := 1; ; attempt++ {
		var rec *Head
		h, err := st.GetPayment(ctx, psp)
		switch {
		case err == nil:
			rec = &h
		case !errors.Is(err, storeerr.ErrNotFound):
			return NotificationResult{}, err
		}
		var entry *Entry
		if ref := item.EntryRef(); ref != "" && rec != nil {
			es, err := st.GetEntries(ctx, psp, ref)
			if err != nil {
				return NotificationResult{}, err
			}
			if len(es) == 1 {
				entry = &es[0]
			}
		}
		res, err := Notify(ctx, st, rec, entry, item, opts)
		if err != nil || res.Write == nil {
			return res, err
		}
		err = st.Write(ctx, *res.Write)
		if err == nil {
			res.Saved(ctx, st)
			return res, nil
		}
		if done, err := retrySettle(ctx, err, attempt, "notify "+psp); done {
			return NotificationResult{}, err
		}
	}
}
