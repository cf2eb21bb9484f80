package simulator

import (
	"errors"
	"fmt"
	"slices"

	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/upstream"
)

// The platform's own events: what it does to a payment without being
// asked (an authorisation expiring, a cancel made elsewhere, a refund
// undone or made outside the service, disputes, notices, reports), each
// applied to the simulator's own ledger by the rules below (it shares no
// code with the service's) and emitted in its published shape
// (Webhooks-v1.json).

// PlatformEvent is one event the platform makes on its own.
type PlatformEvent struct {
	Code string
	// Amount is REFUND_WITH_DATA's refund, a dispute's disputed amount (0:
	// the payment's).
	Amount int64
	// Of is the refund REFUNDED_REVERSED undoes, or the dispute an event
	// continues ("": a new one).
	Of string
	// Account is REPORT_AVAILABLE's merchant account.
	Account string
}

// ModExpire is the platform's expiry of a payment's uncaptured remainder.
const ModExpire = "expire"

// StateExpired: the authorisation expired with nothing captured.
const StateExpired = "Expired"

// errNoEvent: the event does not apply to the payment as it stands.
var errNoEvent = errors.New("simulator: the platform event does not apply")

// PlatformEvent applies ev to payment psp ("" for REPORT_AVAILABLE, which
// names none) and emits its notification, which it returns.
func (s *Simulator) PlatformEvent(psp string, ev PlatformEvent) (upstream.NotificationRequestItem, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.platformEvent(psp, ev)
}

// platformEvent is PlatformEvent with s.mu held.
func (s *Simulator) platformEvent(psp string, ev PlatformEvent) (upstream.NotificationRequestItem, error) {
	if ev.Code == "REPORT_AVAILABLE" {
		name := "settlement_detail_report_batch_" + s.uniquePSP() + ".csv"
		item := upstream.NotificationRequestItem{AdditionalData: map[string]string{}, Amount: money.Amount{Currency: "EUR"},
			EventCode: ev.Code, EventDate: s.eventDate(), MerchantAccountCode: ev.Account, PSPReference: name,
			Reason: "https://ca-test.adyen.com/reports/download/MerchantAccount/" + ev.Account + "/" + name, Success: "true"}
		s.emit(item)
		return item, nil
	}
	p := s.payments[psp]
	if p == nil || !authorisedState(p) && p.State != StateRefunded {
		return upstream.NotificationRequestItem{}, fmt.Errorf("payment %s: %w", psp, errNoEvent)
	}
	now := s.clock.Now()
	authorised := money.Amount{Value: p.Authorised, Currency: p.Amount.Currency}
	amount := func(v int64) money.Amount {
		if v == 0 {
			return authorised
		}
		return money.Amount{Value: v, Currency: p.Amount.Currency}
	}
	var item upstream.NotificationRequestItem
	switch ev.Code {
	case "EXPIRE", "CANCELLATION", "TECHNICAL_CANCEL":
		if p.Released || p.RemainderClosed || p.Captured >= p.Authorised || p.State == StateRefunded {
			return item, fmt.Errorf("payment %s has no uncaptured remainder: %w", psp, errNoEvent)
		}
		p.Released = true
		mod := ModificationState{PSPReference: p.PSP, Kind: ModExpire, Amount: authorised, Success: true, CreatedAt: now}
		item = s.modificationItem(p, p.PSP, ev.Code, "", authorised, true, "")
		if ev.Code == "EXPIRE" {
			item.OriginalReference = "" // as published: the payment in pspReference
		} else {
			mod.PSPReference, mod.Kind = s.newModRef(p), ModCancel
			item.PSPReference = mod.PSPReference
		}
		p.Modifications = append(p.Modifications, mod)
		switch {
		case p.Captured > 0:
			p.State = StateCaptured
		case ev.Code == "EXPIRE":
			p.State = StateExpired
		default:
			p.State = StateCancelled
		}
	case "MANUAL_REVIEW_REJECT":
		// The platform cancels the payment it held for review: nothing
		// captured, or the rejection fails.
		ok := p.Captured == 0
		if ok {
			p.State, p.Released = StateCancelled, true
		}
		mod := ModificationState{PSPReference: s.newModRef(p), Kind: ModCancel, Amount: authorised, Success: ok, CreatedAt: now}
		p.Modifications = append(p.Modifications, mod)
		item = s.modificationItem(p, mod.PSPReference, ev.Code, "", authorised, ok, "")
	case "REFUNDED_REVERSED":
		i := slices.IndexFunc(p.Modifications, func(m ModificationState) bool { return m.PSPReference == ev.Of })
		if i < 0 || p.Modifications[i].Kind != ModRefund || !p.Modifications[i].Success {
			return item, fmt.Errorf("payment %s has no succeeded refund %s: %w", psp, ev.Of, errNoEvent)
		}
		m := &p.Modifications[i]
		m.Success, m.Reason = false, "Refunded reversed"
		p.Refunded -= m.Amount.Value
		if p.State == StateRefunded {
			s.updateCaptureState(p)
			if p.Released && p.Captured > 0 {
				p.State = StateCaptured
			}
		}
		item = s.modificationItem(p, m.PSPReference, ev.Code, m.Reference, m.Amount, true, "")
	case "REFUND_WITH_DATA":
		if ev.Amount <= 0 || ev.Amount > p.Captured-p.Refunded {
			return item, fmt.Errorf("payment %s: a refund of %d exceeds what is refundable: %w", psp, ev.Amount, errNoEvent)
		}
		mod := ModificationState{PSPReference: s.newModRef(p), Kind: ModRefund, Amount: amount(ev.Amount), Success: true, CreatedAt: now}
		p.Modifications = append(p.Modifications, mod)
		p.Refunded += ev.Amount
		if p.Refunded >= p.Captured {
			p.State = StateRefunded
		}
		item = s.modificationItem(p, mod.PSPReference, ev.Code, "", mod.Amount, true, "")
	case "RECURRING_CONTRACT":
		token := p.StoredID
		if token == "" {
			token = s.uniquePSP()
		}
		item = s.modificationItem(p, token, ev.Code, "", money.Amount{Currency: p.Amount.Currency}, true, "")
		item.OriginalPSP = p.PSP
	default:
		// Disputes (their reference shared by their events), notices and
		// codes the platform adds: no money moves here.
		ref := ev.Of
		if ref == "" {
			ref = s.newModRef(p)
		}
		item = s.modificationItem(p, ref, ev.Code, "", amount(ev.Amount), true, "")
	}
	s.emit(item)
	return item, nil
}
