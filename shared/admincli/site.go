package admincli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/yp/paysvc/shared/provision"
	"github.com/yp/paysvc/shared/storeerr"
	"github.com/yp/paysvc/shared/tenant"
)

// parseFlows parses --flows.
func parseFlows(path, s string) ([]tenant.Flow, error) {
	var out []tenant.Flow
	for _, item := range splitList(strings.ToLower(s)) {
		switch fl := tenant.Flow(item); fl {
		case tenant.FlowSessions, tenant.FlowAdvanced:
			out = append(out, fl)
		default:
			return nil, usagef(path, "--flows: unknown flow %q (known: sessions, advanced)", item)
		}
	}
	if len(out) == 0 {
		return nil, usagef(path, "--flows must name at least one of sessions, advanced")
	}
	return out, nil
}

func siteRows(t *table, s tenant.Site) {
	t.row("id", s.ID)
	t.row("merchant", s.MerchantID)
	t.row("name", s.Name)
	t.row("type", string(s.Type))
	t.row("flows", join(s.Flows))
	t.row("created", fmtTime(s.CreatedAt))
}

func (c *cli) siteCreate(ctx context.Context, path string, args []string) error {
	f := c.newFlags(path, "--merchant ID --name NAME [flags]",
		"Creates a site (a point of sale) of a merchant. Only ecommerce sites are reachable through /v1/ecom.")
	merchantID := f.str("merchant", "", "the merchant's `ID` (required)")
	id := f.str("id", "", "site `ID` (A-Z a-z 0-9 _ -, at most 64 characters); generated (site_…) when omitted")
	name := f.str("name", "", "the site's name (required)")
	typ := f.str("type", string(tenant.SiteEcommerce), "site type: `ecommerce|pos`")
	flows := f.str("flows", "sessions,advanced", "checkout flows the site is enabled for: comma-separated `sessions,advanced`")
	if err := f.parse(args, "merchant", "name"); err != nil {
		return err
	}
	site := tenant.Site{ID: strings.TrimSpace(*id), MerchantID: strings.TrimSpace(*merchantID), Name: strings.TrimSpace(*name)}
	if site.ID != "" {
		if err := provision.ValidID("--id", site.ID); err != nil {
			return usagef(path, "%v", err)
		}
	}
	switch st := tenant.SiteType(strings.ToLower(strings.TrimSpace(*typ))); st {
	case tenant.SiteEcommerce, tenant.SitePOS:
		site.Type = st
	default:
		return usagef(path, "--type must be ecommerce or pos, not %q", *typ)
	}
	var err error
	if site.Flows, err = parseFlows(path, *flows); err != nil {
		return err
	}
	return c.withMerchant(ctx, site.MerchantID, func(s *session, m tenant.Merchant) error {
		if site.ID != "" {
			old, err := s.tenants().GetSite(ctx, site.ID)
			if err == nil {
				return fmt.Errorf("site %q already exists (merchant %s)", site.ID, old.MerchantID)
			}
			if !errors.Is(err, storeerr.ErrNotFound) {
				return fmt.Errorf("read site %q: %w", site.ID, err)
			}
		}
		if site, err = s.prov.PutSite(ctx, site); err != nil {
			return fmt.Errorf("create site: %w", err)
		}
		if !m.Active {
			c.warnf("merchant %s is inactive", m.ID)
		}
		return c.show(*f.json, site, func(t *table) { siteRows(t, site) })
	})
}

func (c *cli) siteList(ctx context.Context, path string, args []string) error {
	f := c.newFlags(path, "--merchant ID [--json]", "Lists a merchant's sites, sorted by id.")
	merchantID := f.str("merchant", "", "the merchant's `ID` (required)")
	if err := f.parse(args, "merchant"); err != nil {
		return err
	}
	return c.withMerchant(ctx, *merchantID, func(s *session, m tenant.Merchant) error {
		sites, err := s.tenants().ListSites(ctx, m.ID)
		if err != nil {
			return fmt.Errorf("list sites: %w", err)
		}
		return c.show(*f.json, nonNil(sites), func(t *table) {
			t.row("ID", "NAME", "TYPE", "FLOWS", "CREATED")
			for _, site := range sites {
				t.row(site.ID, site.Name, string(site.Type), join(site.Flows), fmtTime(site.CreatedAt))
			}
		})
	})
}
