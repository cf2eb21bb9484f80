package provision

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/yp/paysvc/shared/jsonin"
	"github.com/yp/paysvc/shared/storeerr"
	"github.com/yp/paysvc/shared/tenant"
)

// Seed is the seed file format (docs/local.md, "Seed file"). Keys and webhook
// secrets appear in plain text here and are stored hashed / as secrets.
type Seed struct {
	Merchants     []tenant.Merchant `json:"merchants"`
	Sites         []tenant.Site     `json:"sites"`
	APIKeys       []SeedKey         `json:"apiKeys"`
	Subscriptions []SeedSub         `json:"subscriptions"`
}

// SeedKey is an API key of a seed file.
type SeedKey struct {
	Key           string              `json:"key"`
	MerchantID    string              `json:"merchantId"`
	Name          string              `json:"name"`
	Permissions   []tenant.Permission `json:"permissions"`
	SiteIDs       []string            `json:"siteIds"`
	RatePerSecond int                 `json:"ratePerSecond"`
	Burst         int                 `json:"burst"`
	Revoked       bool                `json:"revoked"`
}

// SeedSub is a webhook subscription of a seed file.
type SeedSub struct {
	ID         string   `json:"id"`
	MerchantID string   `json:"merchantId"`
	URL        string   `json:"url"`
	Secret     string   `json:"secret"`
	EventCodes []string `json:"eventCodes"`
	// AllowInsecureLocal admits an http(s) target on loopback/localhost,
	// for local development only (the CLI's --allow-insecure-local).
	AllowInsecureLocal bool `json:"allowInsecureLocal"`
}

// LoadSeed reads and strictly decodes a seed file.
func LoadSeed(path string) (Seed, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Seed{}, err
	}
	s, err := ParseSeed(b)
	if err != nil {
		return Seed{}, fmt.Errorf("seed file %s: %w", path, err)
	}
	return s, nil
}

// ParseSeed strictly decodes a seed document: unknown fields, trailing data
// and a name given twice in one object (which would silently keep only the
// last) are errors. An error quotes nothing of a document that is not a
// seed (a path given to seed --file may name any file): invalid JSON and
// unknown fields are told by their byte offset, and names given twice are
// looked for only once every name is a seed's.
func ParseSeed(b []byte) (Seed, error) {
	if !json.Valid(b) {
		var v any
		var syn *json.SyntaxError
		if errors.As(json.Unmarshal(b, &v), &syn) {
			return Seed{}, fmt.Errorf("invalid JSON (at byte %d)", syn.Offset)
		}
		return Seed{}, errors.New("invalid JSON")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var s Seed
	if err := dec.Decode(&s); err != nil {
		var typ *json.UnmarshalTypeError
		if errors.As(err, &typ) {
			return Seed{}, fmt.Errorf("%s: must be %s (at byte %d)", typ.Field, typ.Type, typ.Offset)
		}
		return Seed{}, fmt.Errorf("an unknown field or a value no seed has (before byte %d)", dec.InputOffset())
	}
	if field, dup := jsonin.DuplicateKey(b); dup {
		return Seed{}, fmt.Errorf("%s: is given more than once", field)
	}
	return s, nil
}

// ApplySeed provisions everything in s. It is idempotent: records are
// upserted and keys that already exist are left as they are.
func (p *Provisioner) ApplySeed(ctx context.Context, s Seed) error {
	for _, m := range s.Merchants {
		if _, err := p.PutMerchant(ctx, m); err != nil {
			return fmt.Errorf("seed merchant %s: %w", m.ID, err)
		}
	}
	for _, site := range s.Sites {
		if _, err := p.PutSite(ctx, site); err != nil {
			return fmt.Errorf("seed site %s: %w", site.ID, err)
		}
	}
	for i, k := range s.APIKeys {
		if k.Key == "" {
			return fmt.Errorf("seed apiKeys[%d]: key is required", i)
		}
		rec, _, err := p.CreateAPIKey(ctx, KeySpec{
			MerchantID: k.MerchantID, Name: k.Name, Permissions: expandPerms(k.Permissions),
			SiteIDs: k.SiteIDs, RatePerSecond: k.RatePerSecond, Burst: k.Burst, Secret: k.Key,
		})
		if errors.Is(err, storeerr.ErrConflict) {
			continue // already seeded
		}
		if err != nil {
			return fmt.Errorf("seed apiKeys[%d]: %w", i, err)
		}
		if k.Revoked {
			if err := p.RevokeAPIKey(ctx, rec.MerchantID, rec.ID); err != nil {
				return fmt.Errorf("seed apiKeys[%d]: revoke: %w", i, err)
			}
		}
	}
	for _, sub := range s.Subscriptions {
		existing, err := p.Store.GetSubscription(ctx, sub.MerchantID, sub.ID)
		if err == nil && existing.URL == sub.URL {
			continue // keep its secrets and state
		}
		if _, _, err := p.PutSubscription(ctx, SubscriptionSpec{
			ID: sub.ID, MerchantID: sub.MerchantID, URL: sub.URL, Secret: sub.Secret, EventCodes: sub.EventCodes,
			AllowLocal: sub.AllowInsecureLocal,
		}); err != nil {
			return fmt.Errorf("seed subscription %s: %w", sub.ID, err)
		}
	}
	return nil
}

// expandPerms turns ["*"] into every permission.
func expandPerms(ps []tenant.Permission) []tenant.Permission {
	for _, p := range ps {
		if strings.TrimSpace(string(p)) == "*" {
			return nil
		}
	}
	return ps
}

// Demo returns the demo tenant created on a first local start without a
// seed file, with a freshly generated key.
func Demo(env tenant.Environment) (Seed, error) {
	key, err := tenant.NewKeySecret(env)
	if err != nil {
		return Seed{}, err
	}
	return Seed{
		Merchants: []tenant.Merchant{{
			ID: "m_demo", Name: "Demo Shop", Country: "NL", Active: true, CaptureMode: tenant.CaptureManual,
			Ecommerce: true, UpstreamAccount: "DemoShopECOM", ClientKey: "test_DEMOCLIENTKEY0000000000000000",
			SplitAccount: "BA_demo_merchant", CommissionAccount: "BA_platform", CommissionBps: 150, CommissionFixed: 10,
		}},
		Sites:   []tenant.Site{{ID: "site_demo", MerchantID: "m_demo", Name: "Demo web shop", Type: tenant.SiteEcommerce}},
		APIKeys: []SeedKey{{Key: key, MerchantID: "m_demo", Name: "demo key", Permissions: []tenant.Permission{"*"}}},
	}, nil
}
