package payments

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/yp/paysvc/shared/apperr"
	"github.com/yp/paysvc/shared/storeerr"
	"github.com/yp/paysvc/shared/tenant"
)

// Store is the port that keeps sessions and payments, each payment as a
// ledger (ledger.go): its head, its entries and its timeline.
type Store interface {
	// PutSession writes a session (overwrites one with the same id).
	PutSession(ctx context.Context, s Session) error
	// GetSession returns storeerr.ErrNotFound for an unknown or expired session.
	GetSession(ctx context.Context, id string) (Session, error)
	// GetPayment returns payment psp's head; storeerr.ErrNotFound for an
	// unknown (or expired) one.
	GetPayment(ctx context.Context, psp string) (Head, error)
	// GetEntries returns those of the entries refs of payment psp that
	// exist, in any order.
	GetEntries(ctx context.Context, psp string, refs ...string) ([]Entry, error)
	// Timeline returns at most limit facts of payment psp after cursor
	// ("": from the first), oldest first, and the cursor of the last one
	// returned when more follow ("" otherwise).
	Timeline(ctx context.Context, psp, cursor string, limit int) ([]Fact, string, error)
	// Write makes w, atomically: all of it or nothing.
	// storeerr.ErrConflict when one of its conditions fails.
	Write(ctx context.Context, w Write) error
}

// Write is one atomic change of a payment: its head (put whole, or its
// Totals moved by a delta), entries and timeline facts.
type Write struct {
	PSP string
	// Put, when set, is the whole head, written if the stored head's
	// version is Put.Version−1 (Put.Version 1: no head may exist). Else
	// Delta is added to the stored head's Totals if it meets Expect (its
	// Version then moves on by one, Seq by SeqStep, UpdatedAt to At).
	Put     *Head
	Delta   Totals
	SeqStep int64
	Expect  Expect
	At      time.Time
	// Entries are written each if its stored version is Version−1
	// (Version 1: none may exist).
	Entries []Entry
	// Facts are appended to the timeline; the same fact written again
	// (same ID and time) is stored once. (The embedded store keeps only
	// the first of an ID whatever its time; DynamoDB keys facts by time,
	// so the domain writes a fact again only at the same time.)
	Facts []Fact
}

// Expect is what a Delta write requires of the stored head, besides
// existing. Zero fields require nothing.
type Expect struct {
	// MerchantID and SiteID must be the head's.
	MerchantID string
	SiteID     string
	// Authorised: the authorisation's state (Head.AuthStatus) is
	// StateAuthorised.
	Authorised bool
	// NoReversal: no reversal accepted or in flight.
	NoReversal bool
	// NoAmountUpdate: no amount update in flight.
	NoAmountUpdate bool
	// NotReleased: the uncaptured remainder was not released (Totals.Released)
	// and no cancel is in flight.
	NotReleased bool
	// PreAuth: the payment is a pre-authorisation; Uncaptured: nothing
	// captured or being captured.
	PreAuth    bool
	Uncaptured bool
	// Currency, Capturable and Refundable, when set, apply once the
	// payment's amount is known (Head.AmountKnown): its currency, and
	// minimums of the Totals'. Until then the platform is the guard.
	Currency   string
	Capturable *int64
	Refundable *int64
	// Seq, when set, is the head's Seq.
	Seq *int64
	// NoLineItems, when set (OpCapture or OpRefund), says the request
	// carries no lineItems: once the amount is known, a payment of a method
	// that needs them (Head.NeedsLineItems) takes it only whole — a capture
	// of all that was authorised (nothing captured yet, Capturable at most
	// its amount), a refund of all that was captured.
	NoLineItems OpKind
}

// Meets reports whether head h meets e (what a store checks).
func (e Expect) Meets(h Head) bool {
	t := h.Totals
	switch {
	case e.MerchantID != "" && h.MerchantID != e.MerchantID, e.SiteID != "" && h.SiteID != e.SiteID:
		return false
	case e.Authorised && h.AuthStatus() != StateAuthorised:
		return false
	case e.NoReversal && (t.Reversals != 0 || t.ReversalsInFlight != 0):
		return false
	case e.NoAmountUpdate && t.AmountUpdatesInFlight != 0:
		return false
	case e.NotReleased && (t.Released != 0 || t.CancelsInFlight != 0):
		return false
	case e.PreAuth && h.AuthorisationType != AuthorisationPreAuth, e.Uncaptured && (t.Captured != 0 || t.CapturesInFlight != 0):
		return false
	case e.Seq != nil && h.Seq != *e.Seq:
		return false
	case !h.AmountKnown():
		return true
	case e.Currency != "" && h.Amount.Currency != e.Currency:
		return false
	case e.Capturable != nil && t.Capturable < *e.Capturable, e.Refundable != nil && t.Refundable < *e.Refundable:
		return false
	case e.NoLineItems == OpCapture && e.Capturable != nil && h.NeedsLineItems() &&
		(t.Captured != 0 || t.CapturesInFlight != 0 || t.Capturable > *e.Capturable):
		return false
	case e.NoLineItems == OpRefund && e.Refundable != nil && h.NeedsLineItems() && t.Captured > *e.Refundable:
		return false
	}
	return true
}

// Apply returns head h after Delta write w (what a store writes).
func (w Write) Apply(h Head) Head {
	h.Totals = h.Totals.Add(w.Delta)
	h.Seq += w.SeqStep
	h.Version++
	if w.At.After(h.UpdatedAt) {
		h.UpdatedAt = w.At
	}
	return h
}

// Owned returns payment psp of this merchant and site, or
// apperr.PaymentNotFound for an unknown one and for one of another
// merchant or site alike (and for the service's internal records).
func Owned(ctx context.Context, st interface {
	GetPayment(ctx context.Context, psp string) (Head, error)
}, m tenant.Merchant, site tenant.Site, psp string) (Head, error) {
	notFound := apperr.New(apperr.PaymentNotFound, "payment not found for this site")
	if psp == "" || len(psp) > maxPSPReference || IsPendingKey(psp) {
		return Head{}, notFound
	}
	h, err := st.GetPayment(ctx, psp)
	if errors.Is(err, storeerr.ErrNotFound) {
		return Head{}, notFound
	}
	if err != nil {
		return Head{}, apperr.Wrap(apperr.Internal, "internal error", fmt.Errorf("read payment %s: %w", psp, err))
	}
	if h.MerchantID != m.ID || h.SiteID != site.ID || h.BoundTo != "" {
		return Head{}, notFound
	}
	return h, nil
}

// pendingPrefix starts every pending key; no pspReference starts with it.
const pendingPrefix = "pending_"

// IsPendingKey reports whether key names a pending record rather than a
// payment.
func IsPendingKey(key string) bool { return strings.HasPrefix(key, pendingPrefix) }

// maxPSPReference bounds a pspReference in a path.
const maxPSPReference = 64

// updateHead applies fn to payment psp's head (Version 0: none stored)
// and writes it conditionally on its version, with facts, re-reading and
// re-applying on a concurrent change, and returns it as written. The first
// attempt starts from start when it is set (the head as the caller read
// it; Version 0: none, so the write creates it) instead of reading. fn
// returning errSkip writes nothing.
func updateHead(ctx context.Context, st Store, psp string, start *Head, fn func(*Head) error, facts ...Fact) (Head, error) {
	for attempt := 1; ; attempt++ {
		var h Head
		var err error
		if attempt == 1 && start != nil {
			h = start.clone()
		} else if h, err = st.GetPayment(ctx, psp); errors.Is(err, storeerr.ErrNotFound) {
			h, err = Head{PSPReference: psp}, nil
		}
		if err != nil {
			return Head{}, err
		}
		next := h.clone()
		if err := fn(&next); err != nil {
			if errors.Is(err, errSkip) {
				return h, nil
			}
			return Head{}, err
		}
		next.PSPReference, next.Version = psp, h.Version+1
		err = st.Write(ctx, Write{PSP: psp, Put: &next, Facts: facts})
		if !errors.Is(err, storeerr.ErrConflict) {
			return next, err
		}
		if attempt == maxSettleAttempts {
			return Head{}, fmt.Errorf("update payment %s: %w: %w", psp, errBusy, storeerr.ErrConflict)
		}
		if attempt == 1 && start != nil {
			continue // start was a guess, not a read: read at once
		}
		if err := WaitToRetry(ctx, nil, attempt); err != nil {
			return Head{}, err
		}
	}
}

// errSkip tells updateHead that fn decided to change nothing.
var errSkip = errors.New("payments: no change")

// maxReserveAttempts bounds the retries of a request's write that lost to
// concurrent changes (each retry follows a change that landed): past it
// the caller gets 409 yp_2005 and may retry.
const maxReserveAttempts = 50

// maxSettleAttempts bounds the retries of a write recording what the
// platform did, which is never given up lightly (about 25 s of waits).
const maxSettleAttempts = 1000

// conflictWait is the jittered wait before retry attempt n (1-based).
func conflictWait(n int) time.Duration {
	d := min(time.Duration(1<<min(n, 5))*time.Millisecond/2, 25*time.Millisecond) // 1 ms … 16 ms
	return d/2 + rand.N(d/2+1)
}

// Sleeper waits out the pause before a retry of a write that lost to
// concurrent changes. The Service's is real time unless SleepWith sets
// another: a test counts the time its requests waited on its own clock.
type Sleeper interface {
	// Sleep waits d, or returns ctx's error if ctx ends first.
	Sleep(ctx context.Context, d time.Duration) error
}

// realTime is the Sleeper of real time.
type realTime struct{}

// Sleep waits d on a timer, or returns ctx's error.
func (realTime) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// WaitToRetry waits on sl (nil: real time) the jittered pause before
// retry attempt n (1-based) of a write that lost to concurrent changes
// of a payment, or returns ctx's error (an errBusy).
func WaitToRetry(ctx context.Context, sl Sleeper, n int) error {
	if sl == nil {
		sl = realTime{}
	}
	if err := sl.Sleep(ctx, conflictWait(n)); err != nil {
		return fmt.Errorf("%w (%w)", err, errBusy)
	}
	return nil
}

// retrySettle judges a settling write (what names it) that returned err
// on attempt n: done with err unless it lost to a concurrent change, done
// busy past maxSettleAttempts, else to be tried again after the wait.
func retrySettle(ctx context.Context, err error, n int, what string) (done bool, _ error) {
	switch {
	case !errors.Is(err, storeerr.ErrConflict):
		return true, err
	case n == maxSettleAttempts:
		return true, fmt.Errorf("%s: %w: %w", what, errBusy, storeerr.ErrConflict)
	}
	err = WaitToRetry(ctx, nil, n)
	return err != nil, err
}

// errBusy: a change lost to concurrent changes every time it was tried.
var errBusy = errors.New("payments: too many concurrent updates")
