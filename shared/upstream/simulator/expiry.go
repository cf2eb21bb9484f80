package simulator

import (
	"time"
)

// Authorisation expiry, as the platform does it on its own time: an
// authorisation left uncaptured past its method's validity expires, the
// uncaptured remainder is released (what was captured stays refundable)
// and EXPIRE is sent. The simulator keeps its own copy of the method
// table (it is the oracle the service's own table is tested against):
// adyen.help 115001179684 "Which payment methods support separate
// authorisation and capture?" (28 days for the card networks, 12 for
// Cartes Bancaires, 3 for PayPal); methods not on that page are captured
// at authorisation.

// eventExpire is the platform's EXPIRE event code (Webhooks-v1 /EXPIRE).
const eventExpire = "EXPIRE"

const simDay = 24 * time.Hour

// authorisationValidity is how long an authorisation of payment method
// label (a card brand or a method type) stays capturable; false for
// methods captured at authorisation.
func authorisationValidity(label string) (time.Duration, bool) {
	switch label {
	case "cartebancaire":
		return 12 * simDay, true
	case "paypal":
		return 3 * simDay, true
	case "ideal", "bcmc", "bcmc_mobile", "twint", "swish", "blik", "mobilepay", "trustly", "eps", "giropay", "vipps",
		"sepadirectdebit", "directdebit_GB":
		return 0, false
	}
	return 28 * simDay, true
}

// ExpireAuthorisations expires, on the simulator's clock, every payment
// whose uncaptured remainder has outlived its method's validity (counted
// from its creation): the remainder is released — a later capture is
// refused, the captured money stays refundable — and EXPIRE is sent in
// its published shape (the payment in pspReference, no originalReference,
// the amount originally authorised; PlatformEvent's rule). It returns the
// payments expired.
func (s *Simulator) ExpireAuthorisations() []string {
	defer s.persist()
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	var expired []string
	for _, psp := range s.paymentOrder {
		p := s.payments[psp]
		if p.State != StateAuthorised && p.State != StatePartiallyCaptured || p.Captured >= p.Authorised {
			continue
		}
		d, ok := authorisationValidity(p.methodLabel())
		if !ok || now.Before(p.CreatedAt.Add(d)) {
			continue
		}
		if _, err := s.platformEvent(psp, PlatformEvent{Code: eventExpire}); err != nil {
			continue // no uncaptured remainder (released already)
		}
		expired = append(expired, psp)
	}
	return expired
}
