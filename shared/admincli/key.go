package admincli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/yp/paysvc/shared/provision"
	"github.com/yp/paysvc/shared/storeerr"
	"github.com/yp/paysvc/shared/tenant"
)

// keyNotice is printed with every new API key.
const keyNotice = "store it now, it cannot be shown again"

// keyView is an API key record as printed: never its hash.
type keyView struct {
	ID            string              `json:"id"`
	Name          string              `json:"name,omitempty"`
	Hint          string              `json:"hint"`
	MerchantID    string              `json:"merchantId"`
	Environment   tenant.Environment  `json:"environment"`
	Permissions   []tenant.Permission `json:"permissions"`
	SiteIDs       []string            `json:"siteIds"` // empty = every site
	RatePerSecond int                 `json:"ratePerSecond,omitempty"`
	Burst         int                 `json:"burst,omitempty"`
	CreatedAt     time.Time           `json:"createdAt"`
	Revoked       bool                `json:"revoked"`
	RevokedAt     *time.Time          `json:"revokedAt,omitempty"`
}

func viewKey(k tenant.APIKey) keyView {
	return keyView{
		ID: k.ID, Name: k.Name, Hint: k.Hint, MerchantID: k.MerchantID, Environment: k.Environment,
		Permissions: nonNil(k.Permissions), SiteIDs: nonNil(k.SiteIDs), RatePerSecond: k.RatePerSecond,
		Burst: k.Burst, CreatedAt: k.CreatedAt, Revoked: k.Revoked(), RevokedAt: k.RevokedAt,
	}
}

// createdKey is what key create prints: the record and, once, the key.
type createdKey struct {
	APIKey keyView `json:"apiKey"`
	Key    string  `json:"key"`
	Notice string  `json:"notice"`
}

// parsePermissions parses --permissions: a comma-separated list or "*".
func parsePermissions(path, s string) ([]tenant.Permission, error) {
	items := splitList(s)
	if len(items) == 0 {
		return nil, usagef(path, "--permissions must list at least one permission, or * for all")
	}
	if slices.Contains(items, "*") {
		if len(items) > 1 {
			return nil, usagef(path, "--permissions: * already means every permission; give it alone")
		}
		return slices.Clone(tenant.AllPermissions), nil
	}
	out := make([]tenant.Permission, 0, len(items))
	for _, item := range items {
		p := tenant.Permission(item)
		if !slices.Contains(tenant.AllPermissions, p) {
			return nil, usagef(path, "--permissions: unknown permission %q (known: %s, or * for all)", item, join(tenant.AllPermissions))
		}
		out = append(out, p)
	}
	return out, nil
}

// permSummary joins permissions with commas, "*" for every permission.
func permSummary(ps []tenant.Permission) string {
	all := len(ps) == len(tenant.AllPermissions)
	for _, p := range tenant.AllPermissions {
		all = all && slices.Contains(ps, p)
	}
	if all {
		return "* (all)"
	}
	return join(ps)
}

// allOr joins ids with commas, "(all)" for none (a key's sites, a
// subscription's events).
func allOr(ids []string) string {
	if len(ids) == 0 {
		return "(all)"
	}
	return strings.Join(ids, ",")
}

func rateSummary(k tenant.APIKey) string {
	if k.RatePerSecond == 0 && k.Burst == 0 {
		return "default"
	}
	rate, burst := "default", "default"
	if k.RatePerSecond > 0 {
		rate = fmt.Sprint(k.RatePerSecond)
	}
	if k.Burst > 0 {
		burst = fmt.Sprint(k.Burst)
	}
	return rate + "/s, burst " + burst
}

func keyRows(t *table, k tenant.APIKey) {
	t.row("id", k.ID)
	t.row("name", k.Name)
	t.row("merchant", k.MerchantID)
	t.row("environment", string(k.Environment))
	t.row("hint", k.Hint)
	t.row("permissions", permSummary(k.Permissions))
	t.row("sites", allOr(k.SiteIDs))
	t.row("rate limit", rateSummary(k))
	t.row("created", fmtTime(k.CreatedAt))
	t.row("revoked", fmtTimePtr(k.RevokedAt))
}

func (c *cli) keyCreate(ctx context.Context, path string, args []string) error {
	f := c.newFlags(path, "--merchant ID --permissions LIST|* [flags]",
		"Creates an API key for a merchant and prints it ONCE: only its SHA-256 hash is stored.\n"+
			"The key's prefix (yp_test_ or yp_live_) follows PAYSVC_ENVIRONMENT.\n"+
			wrap("Permissions (comma-separated, or * for all): "+strings.ReplaceAll(join(tenant.AllPermissions), ",", ", ")+".", 88))
	merchantID := f.str("merchant", "", "the merchant's `ID` (required)")
	name := f.str("name", "", "a label for humans, e.g. \"checkout backend\"")
	perms := f.str("permissions", "", "comma-separated `LIST` of permissions, or * for all (required)")
	sites := f.str("sites", "", "restrict the key to a comma-separated `LIST` of site ids (default: every site)")
	rate := f.integer("rate", 0, "requests per second allowed (0 = the service default)")
	burst := f.integer("burst", 0, "burst allowed (0 = the service default)")
	if err := f.parse(args, "merchant", "permissions"); err != nil {
		return err
	}
	ps, err := parsePermissions(path, *perms)
	if err != nil {
		return err
	}
	if *rate < 0 || *burst < 0 {
		return usagef(path, "--rate and --burst must not be negative")
	}
	if *rate > 0 && *burst > 0 && *burst < *rate {
		return usagef(path, "--burst (%d) must be at least --rate (%d)", *burst, *rate)
	}
	spec := provision.KeySpec{
		MerchantID: strings.TrimSpace(*merchantID), Name: strings.TrimSpace(*name), Permissions: ps,
		SiteIDs: splitList(*sites), RatePerSecond: *rate, Burst: *burst,
	}
	return c.withMerchant(ctx, spec.MerchantID, func(s *session, m tenant.Merchant) error {
		for _, id := range spec.SiteIDs {
			site, err := s.tenants().GetSite(ctx, id)
			if errors.Is(err, storeerr.ErrNotFound) || (err == nil && site.MerchantID != m.ID) {
				return fmt.Errorf("--sites: merchant %s has no site %q (see `%s site list --merchant %s`)", m.ID, id, prog, m.ID)
			}
			if err != nil {
				return fmt.Errorf("read site %q: %w", id, err)
			}
		}
		k, secret, err := s.prov.CreateAPIKey(ctx, spec)
		if err != nil {
			return fmt.Errorf("create API key: %w", err)
		}
		if !m.Active {
			c.warnf("merchant %s is inactive: this key is refused until it is reactivated", m.ID)
		}
		if *f.json {
			c.notef("The JSON output holds the API key: %s.", keyNotice)
		}
		return c.show(*f.json, createdKey{APIKey: viewKey(k), Key: secret, Notice: keyNotice}, func(t *table) {
			keyRows(t, k)
			fmt.Fprintf(&t.text, "\nAPI key (%s):\n\n    %s\n\n", keyNotice, secret)
		})
	})
}

func (c *cli) keyList(ctx context.Context, path string, args []string) error {
	f := c.newFlags(path, "--merchant ID [--json]",
		"Lists a merchant's API keys, revoked ones included. Keys themselves are never shown, only their hint.")
	merchantID := f.str("merchant", "", "the merchant's `ID` (required)")
	if err := f.parse(args, "merchant"); err != nil {
		return err
	}
	return c.withMerchant(ctx, *merchantID, func(s *session, m tenant.Merchant) error {
		keys, err := s.tenants().ListAPIKeys(ctx, m.ID)
		if err != nil {
			return fmt.Errorf("list API keys: %w", err)
		}
		return c.show(*f.json, mapped(keys, viewKey), func(t *table) {
			t.row("ID", "NAME", "HINT", "ENV", "PERMISSIONS", "SITES", "RATE LIMIT", "CREATED", "REVOKED")
			for _, k := range keys {
				t.row(k.ID, k.Name, k.Hint, string(k.Environment), permSummary(k.Permissions), allOr(k.SiteIDs),
					rateSummary(k), fmtTime(k.CreatedAt), fmtTimePtr(k.RevokedAt))
			}
		})
	})
}

func (c *cli) keyRevoke(ctx context.Context, path string, args []string) error {
	f := c.newFlags(path, "--merchant ID --id KEY_ID [--json]",
		"Revokes an API key: calls with it get 401 (other service instances notice within the auth cache TTL, 5 s by default).")
	merchantID := f.str("merchant", "", "the merchant's `ID` (required)")
	id := f.str("id", "", "the key's `ID` (key_…, see key list; required)")
	if err := f.parse(args, "merchant", "id"); err != nil {
		return err
	}
	keyID := strings.TrimSpace(*id)
	return c.withMerchant(ctx, *merchantID, func(s *session, m tenant.Merchant) error {
		find := func() (tenant.APIKey, error) {
			keys, err := s.tenants().ListAPIKeys(ctx, m.ID)
			if err != nil {
				return tenant.APIKey{}, fmt.Errorf("list API keys: %w", err)
			}
			for _, k := range keys {
				if k.ID == keyID {
					return k, nil
				}
			}
			return tenant.APIKey{}, fmt.Errorf("merchant %s has no API key %q (see `%s key list --merchant %s`)", m.ID, keyID, prog, m.ID)
		}
		k, err := find()
		if err != nil {
			return err
		}
		if k.Revoked() {
			c.notef("key %s was already revoked at %s", k.ID, fmtTimePtr(k.RevokedAt))
		} else {
			if err := s.prov.RevokeAPIKey(ctx, m.ID, k.ID); err != nil {
				return fmt.Errorf("revoke API key %s: %w", k.ID, err)
			}
			if k, err = find(); err != nil {
				return err
			}
		}
		return c.show(*f.json, viewKey(k), func(t *table) { keyRows(t, k) })
	})
}
