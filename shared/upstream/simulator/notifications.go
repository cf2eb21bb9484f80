package simulator

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/upstream"
)

// eventDate formats the notification time as the upstream does.
func (s *Simulator) eventDate() string { return s.clock.Now().Format(time.RFC3339) }

// baseData returns the additionalData every notification of p carries:
// metadata echoed as metadata.<key> and the session id.
func baseData(p *payment) map[string]string {
	ad := make(map[string]string, len(p.Metadata)+8)
	for k, v := range p.Metadata {
		ad[upstream.MetadataPrefix+k] = v
	}
	if p.SessionID != "" {
		ad[upstream.KeyCheckoutSessionID] = p.SessionID
	}
	return ad
}

// emitAuthorisation emits the AUTHORISATION notification of p once
// (caller holds s.mu).
func (s *Simulator) emitAuthorisation(p *payment, success bool, reason string) {
	if p.AuthorisationEmitted {
		return
	}
	p.AuthorisationEmitted = true
	ad := baseData(p)
	if p.Card != nil {
		ad["cardSummary"] = p.Card.last4()
		ad["expiryDate"] = cardExpiry(p.Card)
	}
	if p.ShopperReference != "" {
		ad["shopperReference"] = p.ShopperReference
	}
	if p.ShopperInteraction != "" {
		ad["shopperInteraction"] = p.ShopperInteraction
	}
	if success {
		maps.Copy(ad, tokenData(p))
		if p.Card != nil {
			authCode := p.PSP[len(p.PSP)-6:]
			ad["authCode"] = authCode
			reason = authCode + ":" + p.Card.last4() + ":" + cardExpiry(p.Card)
		}
	}
	item := upstream.NotificationRequestItem{
		AdditionalData: ad, Amount: p.Amount, EventCode: upstream.EventAuthorisation, EventDate: s.eventDate(),
		MerchantAccountCode: p.MerchantAccount, MerchantReference: p.Reference, PaymentMethod: p.methodLabel(),
		PSPReference: p.PSP, Reason: reason, Success: strconv.FormatBool(success),
	}
	if success {
		item.Operations = []string{"CANCEL", "CAPTURE", "REFUND"}
		if p.State == StateCaptured {
			item.Operations = []string{"REFUND"}
		}
	}
	s.emit(item)
}

// modificationItem builds the notification of a modification of p. Like
// the platform's (the webhook document's modification additionalData), it
// carries no metadata.* and no session id: a receiver finds the payment by
// originalReference.
func (s *Simulator) modificationItem(p *payment, psp, event, ref string, amount money.Amount, success bool, reason string) upstream.NotificationRequestItem {
	return upstream.NotificationRequestItem{
		AdditionalData: map[string]string{}, Amount: amount, EventCode: event, EventDate: s.eventDate(),
		MerchantAccountCode: p.MerchantAccount, MerchantReference: cmp.Or(ref, p.Reference),
		OriginalReference: p.PSP, PaymentMethod: p.methodLabel(), PSPReference: psp, Reason: reason,
		Success: strconv.FormatBool(success),
	}
}

// emit signs item, records it and queues its delivery (caller holds s.mu,
// so notifications are queued in the order of the state changes).
// Every item carries an AdditionalData map; strings, maps and amounts
// always encode.
func (s *Simulator) emit(item upstream.NotificationRequestItem) {
	if s.signer != nil {
		item.AdditionalData[upstream.KeyHMACSignature] = s.signer.SignItem(item)
	}
	body, _ := json.Marshal(upstream.Notification{
		Live:              strconv.FormatBool(s.opts.Live),
		NotificationItems: []upstream.NotificationItem{{Item: item}},
	})
	s.emitted = append(s.emitted, item)
	s.disp.enqueue(outgoing{body: body, item: item})
}

// Notifications returns every notification item emitted so far, oldest
// first, whether or not it was delivered (dropped ones included).
func (s *Simulator) Notifications() []upstream.NotificationRequestItem {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.emitted)
}

// NotificationsFor returns the items emitted for payment psp (its
// AUTHORISATION and the modifications whose originalReference is psp).
func (s *Simulator) NotificationsFor(psp string) []upstream.NotificationRequestItem {
	var out []upstream.NotificationRequestItem
	for _, it := range s.Notifications() {
		if it.PSPReference == psp || it.OriginalReference == psp {
			out = append(out, it)
		}
	}
	return out
}

// Flush releases notifications held for reordering and waits until every
// queued notification has been handed to the Notifier (or dropped).
func (s *Simulator) Flush(ctx context.Context) error { return s.disp.flush(ctx) }

// SetFaults replaces the delivery faults for notifications emitted from now on.
func (s *Simulator) SetFaults(f Faults) { s.disp.setFaults(f) }

// NotificationStats counts notification deliveries.
type NotificationStats struct {
	Emitted int // notifications built
	Sent    int // Notify calls that succeeded (duplicates included; 0 without a Notifier)
	Failed  int // Notify calls that failed (after the notifier's own retries)
	Dropped int // dropped by fault injection
	Pending int // queued or held, not yet handed to the Notifier
}

// NotificationStats returns the delivery counters.
func (s *Simulator) NotificationStats() NotificationStats {
	st := s.disp.stats()
	s.mu.Lock()
	st.Emitted = len(s.emitted)
	s.mu.Unlock()
	return st
}

// PaymentCount returns the number of distinct payments created (by
// /payments and session payments, whatever their outcome). Idempotent
// replays do not create payments, so it proves there was no double charge.
func (s *Simulator) PaymentCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.payments)
}

// Payment returns a snapshot of payment psp.
func (s *Simulator) Payment(psp string) (PaymentState, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.payments[psp]
	if p == nil {
		return PaymentState{}, false
	}
	return p.snapshot(), true
}

// Payments returns snapshots of every payment, oldest first.
func (s *Simulator) Payments() []PaymentState {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]PaymentState, 0, len(s.paymentOrder))
	for _, psp := range s.paymentOrder {
		out = append(out, s.payments[psp].snapshot())
	}
	return out
}

// Errors of ResolvePending.
var (
	ErrPaymentNotFound = errors.New("simulator: payment not found")
	ErrNotPending      = errors.New("simulator: payment is not Received or Pending")
)

// ResolvePending finishes a Received or Pending payment as authorised or
// refused and emits its AUTHORISATION notification.
func (s *Simulator) ResolvePending(psp string, authorised bool) error {
	defer s.persist()
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.payments[psp]
	if p == nil {
		return ErrPaymentNotFound
	}
	if p.State != StateReceived && p.State != StatePending {
		return ErrNotPending
	}
	if authorised {
		s.settle(p, outcome{resultCode: upstream.ResultAuthorised})
	} else {
		s.settle(p, outcome{upstream.ResultRefused, "Refused", "2"})
	}
	return nil
}

// ExpireOffers closes payments whose redirect or challenge was not completed
// within OfferTTL (by the injected clock), emitting OFFER_CLOSED for each,
// and returns their pspReferences (never nil).
func (s *Simulator) ExpireOffers() []string {
	defer s.persist()
	s.mu.Lock()
	defer s.mu.Unlock()
	closed := []string{}
	for _, psp := range s.paymentOrder {
		p := s.payments[psp]
		if p.PendingActionID == "" || s.clock.Now().Sub(p.CreatedAt) < s.opts.OfferTTL {
			continue
		}
		if a := s.actions[p.PendingActionID]; a != nil {
			a.Done = true
		}
		p.PendingActionID = ""
		p.State, p.ResultCode = StateOfferClosed, upstream.ResultCancelled
		item := s.modificationItem(p, p.PSP, upstream.EventOfferClosed, "", p.Amount, true, "")
		item.AdditionalData, item.OriginalReference = baseData(p), "" // the payment in pspReference
		s.emit(item)
		closed = append(closed, psp)
	}
	return closed
}
