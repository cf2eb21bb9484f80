// Package utc returns copies of records with every time in UTC, so the
// store adapters keep UTC and never modify the caller's values.
package utc

import (
	"time"

	"github.com/yp/paysvc/shared/idempotency"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/tenant"
)

// Ptr returns *t in UTC (nil stays nil).
func Ptr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// Merchant returns m in UTC.
func Merchant(m tenant.Merchant) tenant.Merchant {
	m.CreatedAt = m.CreatedAt.UTC()
	return m
}

// Site returns s in UTC.
func Site(s tenant.Site) tenant.Site {
	s.CreatedAt = s.CreatedAt.UTC()
	return s
}

// APIKey returns k in UTC.
func APIKey(k tenant.APIKey) tenant.APIKey {
	k.CreatedAt = k.CreatedAt.UTC()
	k.RevokedAt = Ptr(k.RevokedAt)
	return k
}

// Subscription returns s in UTC.
func Subscription(s tenant.Subscription) tenant.Subscription {
	s.CreatedAt = s.CreatedAt.UTC()
	s.UpdatedAt = Ptr(s.UpdatedAt)
	if s.Secrets != nil {
		secrets := make([]tenant.Secret, len(s.Secrets))
		for i, sec := range s.Secrets {
			sec.CreatedAt = sec.CreatedAt.UTC()
			sec.ExpiresAt = Ptr(sec.ExpiresAt)
			secrets[i] = sec
		}
		s.Secrets = secrets
	}
	return s
}

// Record returns r in UTC.
func Record(r idempotency.Record) idempotency.Record {
	r.LeaseUntil = r.LeaseUntil.UTC()
	r.ExpiresAt = r.ExpiresAt.UTC()
	return r
}

// Session returns s in UTC.
func Session(s payments.Session) payments.Session {
	s.CreatedAt = s.CreatedAt.UTC()
	s.ExpiresAt = s.ExpiresAt.UTC()
	return s
}

// Payment returns p in UTC.
func Payment(p payments.Payment) payments.Payment {
	p.CreatedAt = p.CreatedAt.UTC()
	p.UpdatedAt = p.UpdatedAt.UTC()
	if p.AmountUpdate != nil {
		a := *p.AmountUpdate
		a.Since = a.Since.UTC()
		p.AmountUpdate = &a
	}
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
