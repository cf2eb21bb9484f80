// Package provision creates and changes merchants, sites, API keys and
// webhook subscriptions: the spec's "management console", used by the admin
// CLI and by seed files. It writes through the same store port as the API.
package provision

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/storeerr"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/webhooks/target"
)

// Provisioner writes tenant records.
type Provisioner struct {
	Store tenant.Store
	Env   tenant.Environment
	Clock clock.Clock
}

// PutMerchant validates and upserts a merchant.
func (p *Provisioner) PutMerchant(ctx context.Context, m tenant.Merchant) (tenant.Merchant, error) {
	if m.ID == "" {
		id, err := tenant.NewID("m_")
		if err != nil {
			return m, err
		}
		m.ID = id
	}
	if err := validID("merchant id", m.ID); err != nil {
		return m, err
	}
	if len(m.Country) != 2 {
		return m, fmt.Errorf("merchant country must be a two-letter code, not %q", m.Country)
	}
	if m.CaptureMode == "" {
		m.CaptureMode = tenant.CaptureManual
	}
	if m.CaptureMode != tenant.CaptureAuto && m.CaptureMode != tenant.CaptureManual {
		return m, fmt.Errorf("captureMode must be auto or manual, not %q", m.CaptureMode)
	}
	if m.CommissionBps < 0 || m.CommissionBps > 10_000 || m.CommissionFixed < 0 || m.CommissionFixed > money.MaxValue {
		return m, errors.New("commission must be 0–10000 basis points and a non-negative fixed part")
	}
	if old, err := p.Store.GetMerchant(ctx, m.ID); err == nil {
		m.CreatedAt = old.CreatedAt
	} else if !errors.Is(err, storeerr.ErrNotFound) {
		return m, err
	}
	if m.CreatedAt.IsZero() {
		m.CreatedAt = p.Clock.Now()
	}
	return m, p.Store.PutMerchant(ctx, m)
}

// PutSite validates and upserts a site of an existing merchant.
func (p *Provisioner) PutSite(ctx context.Context, s tenant.Site) (tenant.Site, error) {
	if s.ID == "" {
		id, err := tenant.NewID("site_")
		if err != nil {
			return s, err
		}
		s.ID = id
	}
	if err := validID("site id", s.ID); err != nil {
		return s, err
	}
	if _, err := p.Store.GetMerchant(ctx, s.MerchantID); err != nil {
		return s, fmt.Errorf("site %s: merchant %q: %w", s.ID, s.MerchantID, err)
	}
	if s.Type == "" {
		s.Type = tenant.SiteEcommerce
	}
	if s.Type != tenant.SiteEcommerce && s.Type != tenant.SitePOS {
		return s, fmt.Errorf("site type must be ecommerce or pos, not %q", s.Type)
	}
	if len(s.Flows) == 0 {
		s.Flows = []tenant.Flow{tenant.FlowSessions, tenant.FlowAdvanced}
	}
	for _, f := range s.Flows {
		if f != tenant.FlowSessions && f != tenant.FlowAdvanced {
			return s, fmt.Errorf("site flows must be sessions and/or advanced, not %q", f)
		}
	}
	if old, err := p.Store.GetSite(ctx, s.ID); err == nil {
		if old.MerchantID != s.MerchantID {
			return s, fmt.Errorf("site %s belongs to another merchant", s.ID)
		}
		s.CreatedAt = old.CreatedAt
	}
	if s.CreatedAt.IsZero() {
		s.CreatedAt = p.Clock.Now()
	}
	return s, p.Store.PutSite(ctx, s)
}

// KeySpec describes a key to create. Secret, when set, is the plain key to
// store (seed files); otherwise a fresh one is generated.
type KeySpec struct {
	MerchantID    string
	Name          string
	Permissions   []tenant.Permission // empty = all
	SiteIDs       []string
	RatePerSecond int
	Burst         int
	Secret        string
}

// CreateAPIKey stores a new key (hashed) and returns the record and the
// plain key, which is shown once and never stored.
func (p *Provisioner) CreateAPIKey(ctx context.Context, spec KeySpec) (tenant.APIKey, string, error) {
	if _, err := p.Store.GetMerchant(ctx, spec.MerchantID); err != nil {
		return tenant.APIKey{}, "", fmt.Errorf("merchant %q: %w", spec.MerchantID, err)
	}
	perms := spec.Permissions
	if len(perms) == 0 {
		perms = slices.Clone(tenant.AllPermissions)
	}
	for _, pm := range perms {
		if !slices.Contains(tenant.AllPermissions, pm) {
			return tenant.APIKey{}, "", fmt.Errorf("unknown permission %q (known: %v)", pm, tenant.AllPermissions)
		}
	}
	secret := spec.Secret
	env := p.Env
	if secret != "" {
		env = tenant.EnvironmentOfKey(secret)
		if env == "" || len(secret) < len("yp_test_")+32 {
			return tenant.APIKey{}, "", errors.New("a given key must start with yp_test_ or yp_live_ and have at least 32 characters after it")
		}
	} else {
		var err error
		if secret, err = tenant.NewKeySecret(env); err != nil {
			return tenant.APIKey{}, "", err
		}
	}
	id, err := tenant.NewID("key_")
	if err != nil {
		return tenant.APIKey{}, "", err
	}
	k := tenant.APIKey{
		ID: id, Hash: tenant.HashKey(secret), Hint: tenant.KeyHint(secret), Name: spec.Name,
		MerchantID: spec.MerchantID, Environment: env, Permissions: perms, SiteIDs: spec.SiteIDs,
		RatePerSecond: spec.RatePerSecond, Burst: spec.Burst, CreatedAt: p.Clock.Now(),
	}
	if err := p.Store.CreateAPIKey(ctx, k); err != nil {
		return tenant.APIKey{}, "", err
	}
	return k, secret, nil
}

// RevokeAPIKey revokes a merchant's key.
func (p *Provisioner) RevokeAPIKey(ctx context.Context, merchantID, keyID string) error {
	return p.Store.RevokeAPIKey(ctx, merchantID, keyID, p.Clock.Now())
}

// SubscriptionSpec describes a webhook subscription. Secret, when set, is
// used instead of a generated one (seed files).
type SubscriptionSpec struct {
	ID         string
	MerchantID string
	URL        string
	EventCodes []string
	Secret     string
	// AllowLocal admits a loopback/localhost target (local development;
	// the admin CLI's --allow-insecure-local, a seed's allowInsecureLocal).
	AllowLocal bool
}

// PutSubscription creates or replaces a subscription and returns it with its
// secret (shown once).
func (p *Provisioner) PutSubscription(ctx context.Context, spec SubscriptionSpec) (tenant.Subscription, string, error) {
	if _, err := p.Store.GetMerchant(ctx, spec.MerchantID); err != nil {
		return tenant.Subscription{}, "", fmt.Errorf("merchant %q: %w", spec.MerchantID, err)
	}
	if spec.URL == "" {
		return tenant.Subscription{}, "", errors.New("subscription url is required")
	}
	if _, err := target.Check(spec.URL, spec.AllowLocal); err != nil {
		return tenant.Subscription{}, "", fmt.Errorf("subscription url %q: %w", spec.URL, err)
	}
	id := spec.ID
	if id == "" {
		var err error
		if id, err = tenant.NewID("sub_"); err != nil {
			return tenant.Subscription{}, "", err
		}
	}
	if err := validID("subscription id", id); err != nil {
		return tenant.Subscription{}, "", err
	}
	secret := spec.Secret
	if secret == "" {
		var err error
		if secret, err = tenant.NewWebhookSecret(); err != nil {
			return tenant.Subscription{}, "", err
		}
	}
	now := p.Clock.Now()
	s := tenant.Subscription{
		ID: id, MerchantID: spec.MerchantID, URL: spec.URL, EventCodes: spec.EventCodes,
		Secrets: []tenant.Secret{{Value: secret, CreatedAt: now}}, Enabled: true, CreatedAt: now,
	}
	return s, secret, p.Store.PutSubscription(ctx, s)
}

// RotateSecret adds a new secret to a subscription; the previous ones keep
// signing until overlap has passed.
func (p *Provisioner) RotateSecret(ctx context.Context, merchantID, subID string, overlap time.Duration) (string, error) {
	s, err := p.Store.GetSubscription(ctx, merchantID, subID)
	if err != nil {
		return "", err
	}
	secret, err := tenant.NewWebhookSecret()
	if err != nil {
		return "", err
	}
	now := p.Clock.Now()
	until := now.Add(overlap)
	kept := s.Secrets[:0]
	for _, old := range s.ActiveSecrets(now) {
		if old.ExpiresAt == nil || old.ExpiresAt.After(until) {
			old.ExpiresAt = &until
		}
		kept = append(kept, old)
	}
	slices.Reverse(kept) // ActiveSecrets is newest first; keep oldest first
	s.Secrets = append(kept, tenant.Secret{Value: secret, CreatedAt: now})
	s.UpdatedAt = &now
	return secret, p.Store.PutSubscription(ctx, s)
}

func validID(what, id string) error {
	if len(id) == 0 || len(id) > 64 {
		return fmt.Errorf("%s must be 1 to 64 characters", what)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c == '_' || c == '-' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
			return fmt.Errorf("%s %q: only A-Z, a-z, 0-9, '_' and '-' are allowed", what, id)
		}
	}
	return nil
}
