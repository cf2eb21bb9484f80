package dynamo

import (
	"time"

	"github.com/yp/paysvc/shared/idempotency"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/tenant"
)

// The functions below return copies of records with every time in UTC, so
// the store keeps UTC and never modifies the caller's values.

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

func utcMerchant(m tenant.Merchant) tenant.Merchant {
	m.CreatedAt = m.CreatedAt.UTC()
	return m
}

func utcSite(s tenant.Site) tenant.Site {
	s.CreatedAt = s.CreatedAt.UTC()
	return s
}

func utcAPIKey(k tenant.APIKey) tenant.APIKey {
	k.CreatedAt = k.CreatedAt.UTC()
	k.RevokedAt = utcPtr(k.RevokedAt)
	return k
}

func utcSubscription(s tenant.Subscription) tenant.Subscription {
	s.CreatedAt = s.CreatedAt.UTC()
	s.UpdatedAt = utcPtr(s.UpdatedAt)
	if s.Secrets != nil {
		secrets := make([]tenant.Secret, len(s.Secrets))
		for i, sec := range s.Secrets {
			sec.CreatedAt = sec.CreatedAt.UTC()
			sec.ExpiresAt = utcPtr(sec.ExpiresAt)
			secrets[i] = sec
		}
		s.Secrets = secrets
	}
	return s
}

func utcRecord(r idempotency.Record) idempotency.Record {
	r.LeaseUntil = r.LeaseUntil.UTC()
	r.ExpiresAt = r.ExpiresAt.UTC()
	return r
}

func utcSession(s payments.Session) payments.Session {
	s.CreatedAt = s.CreatedAt.UTC()
	s.ExpiresAt = s.ExpiresAt.UTC()
	return s
}

func utcPayment(p payments.Payment) payments.Payment {
	p.CreatedAt = p.CreatedAt.UTC()
	p.UpdatedAt = p.UpdatedAt.UTC()
	if p.History != nil {
		history := make([]payments.Event, len(p.History))
		for i, e := range p.History {
			e.At = e.At.UTC()
			history[i] = e
		}
		p.History = history
	}
	return p
}
