// Package utc returns copies of records with every time in UTC, so the
// store adapters keep UTC and never modify the caller's values.
package utc

import (
	"time"

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
