package records

import (
	"slices"
	"time"

	"github.com/yp/paysvc/shared/tenant"
)

// Merchant is a stored merchant.
type Merchant struct {
	Format            Format    `json:"format"`
	ID                string    `json:"id"`
	Name              string    `json:"name"`
	Country           string    `json:"country"`
	Active            bool      `json:"active"`
	CaptureMode       string    `json:"captureMode"`
	MultipleCaptures  bool      `json:"multiplePartialCaptures,omitempty"`
	Ecommerce         bool      `json:"ecommerce"`
	UpstreamAccount   string    `json:"upstreamAccount"`
	ClientKey         string    `json:"clientKey"`
	SplitAccount      string    `json:"splitAccount"`
	CommissionAccount string    `json:"commissionAccount,omitempty"`
	CommissionBps     int64     `json:"commissionBps"`
	CommissionFixed   int64     `json:"commissionFixed"`
	CreatedAt         time.Time `json:"createdAt"`
}

// FromMerchant converts a merchant to its stored form.
func FromMerchant(m tenant.Merchant) Merchant {
	return Merchant{
		ID: m.ID, Name: m.Name, Country: m.Country, Active: m.Active, CaptureMode: string(m.CaptureMode),
		MultipleCaptures: m.MultiplePartialCaptures,
		Ecommerce:        m.Ecommerce, UpstreamAccount: m.UpstreamAccount, ClientKey: m.ClientKey, SplitAccount: m.SplitAccount,
		CommissionAccount: m.CommissionAccount, CommissionBps: m.CommissionBps, CommissionFixed: m.CommissionFixed,
		CreatedAt: m.CreatedAt.UTC(),
	}
}

// ToMerchant converts a stored merchant to the domain's.
func (r Merchant) ToMerchant() tenant.Merchant {
	return tenant.Merchant{
		ID: r.ID, Name: r.Name, Country: r.Country, Active: r.Active, CaptureMode: tenant.CaptureMode(r.CaptureMode),
		MultiplePartialCaptures: r.MultipleCaptures,
		Ecommerce:               r.Ecommerce, UpstreamAccount: r.UpstreamAccount, ClientKey: r.ClientKey, SplitAccount: r.SplitAccount,
		CommissionAccount: r.CommissionAccount, CommissionBps: r.CommissionBps, CommissionFixed: r.CommissionFixed,
		CreatedAt: r.CreatedAt,
	}
}

// Site is a stored site.
type Site struct {
	Format     Format    `json:"format"`
	ID         string    `json:"id"`
	MerchantID string    `json:"merchantId"`
	Name       string    `json:"name"`
	Type       string    `json:"type"`
	Flows      []string  `json:"flows"`
	CreatedAt  time.Time `json:"createdAt"`
}

// FromSite converts a site to its stored form.
func FromSite(s tenant.Site) Site {
	return Site{ID: s.ID, MerchantID: s.MerchantID, Name: s.Name, Type: string(s.Type), Flows: strs[string](s.Flows), CreatedAt: s.CreatedAt.UTC()}
}

// ToSite converts a stored site to the domain's.
func (r Site) ToSite() tenant.Site {
	return tenant.Site{ID: r.ID, MerchantID: r.MerchantID, Name: r.Name, Type: tenant.SiteType(r.Type), Flows: strs[tenant.Flow](r.Flows), CreatedAt: r.CreatedAt}
}

// APIKey is a stored API key (its hash, never the key).
type APIKey struct {
	Format        Format     `json:"format"`
	ID            string     `json:"id"`
	Hash          string     `json:"hash"`
	Hint          string     `json:"hint"`
	Name          string     `json:"name,omitempty"`
	MerchantID    string     `json:"merchantId"`
	Environment   string     `json:"environment"`
	Permissions   []string   `json:"permissions"`
	SiteIDs       []string   `json:"siteIds,omitempty"`
	RatePerSecond int        `json:"ratePerSecond,omitempty"`
	Burst         int        `json:"burst,omitempty"`
	CreatedAt     time.Time  `json:"createdAt"`
	RevokedAt     *time.Time `json:"revokedAt,omitempty"`
}

// FromAPIKey converts a key to its stored form.
func FromAPIKey(k tenant.APIKey) APIKey {
	return APIKey{
		ID: k.ID, Hash: k.Hash, Hint: k.Hint, Name: k.Name, MerchantID: k.MerchantID, Environment: string(k.Environment),
		Permissions: strs[string](k.Permissions), SiteIDs: slices.Clone(k.SiteIDs), RatePerSecond: k.RatePerSecond, Burst: k.Burst,
		CreatedAt: k.CreatedAt.UTC(), RevokedAt: utcPtr(k.RevokedAt),
	}
}

// ToAPIKey converts a stored key to the domain's.
func (r APIKey) ToAPIKey() tenant.APIKey {
	return tenant.APIKey{
		ID: r.ID, Hash: r.Hash, Hint: r.Hint, Name: r.Name, MerchantID: r.MerchantID, Environment: tenant.Environment(r.Environment),
		Permissions: strs[tenant.Permission](r.Permissions), SiteIDs: r.SiteIDs, RatePerSecond: r.RatePerSecond, Burst: r.Burst,
		CreatedAt: r.CreatedAt, RevokedAt: r.RevokedAt,
	}
}

// Subscription is a stored webhook subscription.
type Subscription struct {
	Format         Format     `json:"format"`
	ID             string     `json:"id"`
	MerchantID     string     `json:"merchantId"`
	URL            string     `json:"url"`
	Secrets        []Secret   `json:"secrets"`
	EventCodes     []string   `json:"eventCodes,omitempty"`
	Enabled        bool       `json:"enabled"`
	DisabledReason string     `json:"disabledReason,omitempty"`
	CreatedAt      time.Time  `json:"createdAt"`
	UpdatedAt      *time.Time `json:"updatedAt,omitempty"`
}

// Secret is a stored signing secret of a subscription.
type Secret struct {
	Value     string     `json:"value"`
	CreatedAt time.Time  `json:"createdAt"`
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
}

// FromSubscription converts a subscription to its stored form.
func FromSubscription(s tenant.Subscription) Subscription {
	r := Subscription{
		ID: s.ID, MerchantID: s.MerchantID, URL: s.URL, EventCodes: slices.Clone(s.EventCodes), Enabled: s.Enabled,
		DisabledReason: s.DisabledReason, CreatedAt: s.CreatedAt.UTC(), UpdatedAt: utcPtr(s.UpdatedAt),
	}
	if s.Secrets != nil {
		r.Secrets = make([]Secret, len(s.Secrets))
		for i, sec := range s.Secrets {
			r.Secrets[i] = Secret{Value: sec.Value, CreatedAt: sec.CreatedAt.UTC(), ExpiresAt: utcPtr(sec.ExpiresAt)}
		}
	}
	return r
}

// ToSubscription converts a stored subscription to the domain's.
func (r Subscription) ToSubscription() tenant.Subscription {
	s := tenant.Subscription{
		ID: r.ID, MerchantID: r.MerchantID, URL: r.URL, EventCodes: r.EventCodes, Enabled: r.Enabled,
		DisabledReason: r.DisabledReason, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
	if r.Secrets != nil {
		s.Secrets = make([]tenant.Secret, len(r.Secrets))
		for i, sec := range r.Secrets {
			s.Secrets[i] = tenant.Secret(sec)
		}
	}
	return s
}

// strs converts a slice of one string type to another (nil stays nil).
func strs[To, From ~string](in []From) []To {
	return Convert(in, func(v From) To { return To(v) })
}

// Convert converts every stored record of a list to the domain's (nil
// stays nil).
func Convert[R, D any](in []R, to func(R) D) []D {
	if in == nil {
		return nil
	}
	out := make([]D, len(in))
	for i, r := range in {
		out[i] = to(r)
	}
	return out
}
