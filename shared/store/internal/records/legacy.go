package records

import (
	"fmt"
	"strings"
	"time"

	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/tenant"
)

// LegacyPayment is a payment record as the service stored it before
// payments were ledgers (one document: counters, reservations, history).
// Such a record is converted on read (ToLedger) and written as a ledger
// from its first change on.
type LegacyPayment struct {
	PSPReference     string           `json:"pspReference"`
	MerchantID       string           `json:"merchantId"`
	SiteID           string           `json:"siteId"`
	Reference        string           `json:"reference,omitempty"`
	Source           string           `json:"source"`
	SessionID        string           `json:"sessionId,omitempty"`
	Amount           Amount           `json:"amount"`
	AuthorisedValue  int64            `json:"authorisedValue"`
	CapturedValue    int64            `json:"capturedValue"`
	RefundedValue    int64            `json:"refundedValue"`
	State            string           `json:"state"`
	ResultCode       string           `json:"resultCode,omitempty"`
	RefusalReason    string           `json:"refusalReason,omitempty"`
	PaymentMethod    string           `json:"paymentMethod,omitempty"`
	ShopperReference string           `json:"shopperReference,omitempty"`
	StoredMethodID   string           `json:"storedPaymentMethodId,omitempty"`
	StorePayment     bool             `json:"storePaymentMethod,omitempty"`
	AuthType         string           `json:"authorisationType,omitempty"`
	BoundTo          string           `json:"boundTo,omitempty"`
	Reservations     map[string]int64 `json:"reservations,omitempty"`
	AmountUpdate     *InFlight        `json:"amountUpdate,omitempty"`
	// RefundReservations: refunds in flight (added with refunds; absent
	// from records written before).
	RefundReservations map[string]int64 `json:"refundReservations,omitempty"`
	History            []Event          `json:"history"`
	Version            int64            `json:"version"`
	CreatedAt          time.Time        `json:"createdAt"`
	UpdatedAt          time.Time        `json:"updatedAt"`
	// Ledger is the ledger a bridge release keeps in the record it writes
	// (FromLedger); the release before ledgers ignores it, and drops it
	// when it writes the record.
	Ledger *LedgerCopy `json:"ledger,omitempty"`
}

// LedgerCopy is what a legacy record's fields cannot hold of a ledger: the
// head and the entries (their refs, upstream keys, splits, versions); the
// facts' ids are in the history lines (Event.ID). It is the record's
// ledger while its Version is the record's: a record written since by the
// release before ledgers converts from its legacy fields (ToLedger).
type LedgerCopy struct {
	Version int64       `json:"version"`
	Head    PaymentHead `json:"head"`
	Entries []Entry     `json:"entries,omitempty"`
}

// FromLedger is the legacy record of a ledger, as a bridge release writes
// it (docs/payments.md, "Compatibility"): the fields the release before
// ledgers reads — the counters and state from the fold (Head.View), the
// operations in flight as its reservations, the facts as its history —
// and the ledger itself in Ledger, for the releases that read ledgers.
func FromLedger(h payments.Head, entries []payments.Entry, facts []payments.Fact) LegacyPayment {
	v := h.View()
	r := LegacyPayment{
		PSPReference: h.PSPReference, MerchantID: h.MerchantID, SiteID: h.SiteID, Reference: h.Reference,
		Source: string(h.Source), SessionID: h.SessionID, AuthorisedValue: h.Authorised, CapturedValue: v.Captured,
		RefundedValue: v.Refunded, State: string(v.State), ResultCode: h.Auth.ResultCode, RefusalReason: h.RefusalReason,
		PaymentMethod: h.PaymentMethod, ShopperReference: h.ShopperReference, StoredMethodID: h.StoredMethodID,
		StorePayment: h.StorePaymentMethod, AuthType: h.AuthorisationType, BoundTo: h.BoundTo, Version: h.Version,
		CreatedAt: h.CreatedAt.UTC(), UpdatedAt: h.UpdatedAt.UTC(),
		Ledger: &LedgerCopy{Version: h.Version, Head: FromHead(h)},
	}
	if h.AmountKnown() {
		r.Amount = fromAmount(v.Amount)
	}
	for _, e := range entries {
		r.Ledger.Entries = append(r.Ledger.Entries, FromEntry(e))
		c := e.Contribution()
		switch {
		case c.CapturesInFlight > 0:
			r.Reservations = put(r.Reservations, e.Ref, c.CapturesInFlight)
		case c.RefundsInFlight > 0:
			r.RefundReservations = put(r.RefundReservations, e.Ref, c.RefundsInFlight)
		case c.AmountUpdatesInFlight > 0 && e.Requested != nil:
			r.AmountUpdate = &InFlight{Op: e.Ref, Since: e.Requested.At.UTC()}
		}
	}
	r.History = make([]Event, 0, len(facts))
	for _, f := range facts {
		r.History = append(r.History, Event{At: f.At.UTC(), Kind: f.Kind, Origin: f.Origin, PSPReference: f.PSPReference,
			Amount: fromAmountPtr(f.Amount), Success: f.Success, Detail: f.Detail, ID: f.ID})
	}
	return r
}

// put sets m[k] = v, making m if it is nil.
func put(m map[string]int64, k string, v int64) map[string]int64 {
	if m == nil {
		m = map[string]int64{}
	}
	m[k] = v
	return m
}

// copied is the ledger r's Ledger holds, if it is r's (written with r's
// version, every history line with its fact's id).
func (r LegacyPayment) copied() (payments.Head, []payments.Entry, []payments.Fact, bool) {
	c := r.Ledger
	if c == nil || c.Version != r.Version {
		return payments.Head{}, nil, nil, false
	}
	for _, ev := range r.History {
		if ev.ID == "" {
			return payments.Head{}, nil, nil, false
		}
	}
	h := c.Head.ToHead()
	entries := make([]payments.Entry, 0, len(c.Entries))
	for _, e := range c.Entries {
		entries = append(entries, e.ToEntry())
	}
	facts := make([]payments.Fact, 0, len(r.History))
	for _, ev := range r.History {
		facts = append(facts, payments.Fact{ID: ev.ID, At: ev.At, Kind: ev.Kind, Origin: ev.Origin,
			PSPReference: ev.PSPReference, Amount: ev.Amount.toAmountPtr(), Success: ev.Success, Detail: ev.Detail})
	}
	return h, entries, facts, true
}

// InFlight is a stored mark of an operation in flight.
type InFlight struct {
	Op    string    `json:"op"`
	Since time.Time `json:"since"`
}

// Event is a stored entry of a payment's history.
type Event struct {
	At           time.Time `json:"at"`
	Kind         string    `json:"kind"`
	Origin       string    `json:"origin"`
	PSPReference string    `json:"pspReference,omitempty"`
	Amount       *Amount   `json:"amount,omitempty"`
	Success      *bool     `json:"success,omitempty"`
	Detail       string    `json:"detail,omitempty"`
	// ID is the fact's id, written by a bridge release (FromLedger); the
	// release before ledgers ignores it.
	ID string `json:"id,omitempty"`
}

// ToLedger converts a legacy record to a ledger: the one it holds, if a
// bridge release wrote it and nothing since (LedgerCopy); else its head
// (identity, authorisation, authorised amount), one entry per operation
// its history and reservations name, one timeline fact per history line,
// and the head's Totals folded from the entries. The record's own counters
// are not read: what its history says is what the ledger holds.
func (r LegacyPayment) ToLedger() (payments.Head, []payments.Entry, []payments.Fact) {
	if h, entries, facts, ok := r.copied(); ok {
		return h, entries, facts
	}
	h := payments.Head{
		PSPReference: r.PSPReference, MerchantID: r.MerchantID, SiteID: r.SiteID, Reference: r.Reference,
		Source: payments.Source(r.Source), SessionID: r.SessionID, ShopperReference: r.ShopperReference,
		StoredMethodID: r.StoredMethodID, StorePaymentMethod: r.StorePayment, AuthorisationType: r.AuthType,
		PaymentMethod: r.PaymentMethod, RefusalReason: r.RefusalReason, Authorised: r.AuthorisedValue,
		BoundTo: r.BoundTo, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, Version: r.Version,
		Auth: payments.Auth{ResultCode: r.ResultCode, Expired: r.State == string(payments.StateExpired)},
	}
	if r.Amount.Currency != "" {
		h.Amount = r.Amount.toAmount()
	}
	if h.Auth.ResultCode == "" && r.State != "" && !strings.Contains("Captured PartiallyCaptured Refunded PartiallyRefunded Cancelled Expired", r.State) {
		h.Auth.ResultCode = r.State
	}
	if r.CapturedValue > 0 && r.CapturedValue == r.AuthorisedValue && !hasCaptures(r.History) {
		h.CaptureMode = tenant.CaptureAuto // captured in full by its authorisation
	}
	byRef := map[string]*payments.Entry{}
	var order []string
	entry := func(ref string, kind payments.OpKind) *payments.Entry {
		if e, ok := byRef[ref]; ok {
			return e
		}
		e := &payments.Entry{Ref: ref, Kind: kind, Modification: ref, Version: 1}
		byRef[ref] = e
		order = append(order, ref)
		return e
	}
	facts := make([]payments.Fact, 0, len(r.History))
	for i, ev := range r.History {
		f := payments.Fact{ID: fmt.Sprintf("legacy#%010d", i), At: ev.At, Kind: ev.Kind, Origin: ev.Origin,
			PSPReference: ev.PSPReference, Amount: ev.Amount.toAmountPtr(), Success: ev.Success, Detail: ev.Detail}
		facts = append(facts, f)
		var amount money.Amount
		if ev.Amount != nil {
			amount = ev.Amount.toAmount()
		}
		switch {
		case ev.Origin == payments.OriginNotification && ev.Kind == payments.EventAuthorisation:
			ok := ev.Success != nil && *ev.Success
			h.Auth.Notified = &ok
		case ev.Origin == payments.OriginNotification && ev.Kind == payments.EventOfferClosed:
			h.Auth.Expired = ev.Success != nil && *ev.Success
		case ev.Origin == payments.OriginNotification && ev.Success != nil:
			e := entry(ev.PSPReference, legacyKind(ev.Kind))
			e.Notices = append(e.Notices, payments.Notice{Code: ev.Kind, Success: *ev.Success, Amount: amount, Reason: ev.Detail, At: ev.At})
		case ev.Origin == payments.OriginAPI && (ev.Kind == "capture" || ev.Kind == "refund" || ev.Kind == "reversal" || ev.Kind == "amount-update"):
			kind := payments.OpKind(ev.Kind)
			e := entry(ev.PSPReference, kind)
			e.Kind = kind
			e.Requested = &payments.Request{Amount: amount, At: ev.At}
			e.Answered = &payments.Answer{Outcome: payments.Received, At: ev.At}
			if kind == payments.OpAmountUpdate {
				var from int64
				_, _ = fmt.Sscanf(ev.Detail, "from %d", &from)
				h.AmountUpdates = append(h.AmountUpdates, payments.AmountUpdate{Ref: ev.PSPReference, Amount: amount.Value, From: from})
			}
		}
	}
	for op, v := range r.Reservations { // captures sent, not answered
		e := entry(op, payments.OpCapture)
		e.Requested = &payments.Request{Amount: money.Amount{Value: v, Currency: r.Amount.Currency}, At: r.UpdatedAt}
	}
	for ref, v := range r.RefundReservations { // refunds in flight (sent, or accepted without notification)
		e := entry(ref, payments.OpRefund)
		if e.Requested == nil {
			e.Requested = &payments.Request{Amount: money.Amount{Value: v, Currency: r.Amount.Currency}, At: r.UpdatedAt}
		}
		if !strings.HasPrefix(ref, "op_") && e.Answered == nil {
			e.Answered = &payments.Answer{Outcome: payments.Received, At: r.UpdatedAt}
		}
	}
	if a := r.AmountUpdate; a != nil {
		e := entry(a.Op, payments.OpAmountUpdate)
		e.Requested = &payments.Request{At: a.Since}
	}
	entries := make([]payments.Entry, 0, len(order))
	for _, ref := range order {
		entries = append(entries, *byRef[ref])
	}
	for _, u := range h.AmountUpdates { // a failed adjustment notified restores the amount before
		if e := byRef[u.Ref]; e != nil && e.Kind == payments.OpAmountUpdate && hasFailure(e.Notices) {
			for i := range h.AmountUpdates {
				if h.AmountUpdates[i].Ref == u.Ref {
					h.AmountUpdates[i].Failed = true
				}
			}
		}
	}
	h.Totals = payments.Fold(h, entries)
	return h, entries, facts
}

// legacyKind is the operation a legacy history's notification reports.
func legacyKind(code string) payments.OpKind {
	switch code {
	case payments.EventCapture, payments.EventCaptureFailed:
		return payments.OpCapture
	case payments.EventRefund, payments.EventRefundFailed:
		return payments.OpRefund
	case payments.EventAuthorisationAdjustment:
		return payments.OpAmountUpdate
	}
	return payments.OpReversal
}

// hasCaptures reports whether a legacy history holds a capture.
func hasCaptures(history []Event) bool {
	for _, ev := range history {
		if ev.Kind == "capture" || ev.Kind == payments.EventCapture {
			return true
		}
	}
	return false
}

// hasFailure reports a failure among notices.
func hasFailure(ns []payments.Notice) bool {
	for _, n := range ns {
		if !n.Success {
			return true
		}
	}
	return false
}
