package admincli

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/text/language"

	"github.com/yp/paysvc/shared/provision"
	"github.com/yp/paysvc/shared/store/dynamo"
	"github.com/yp/paysvc/shared/storeerr"
	"github.com/yp/paysvc/shared/tenant"
)

// merchantView is a merchant as printed.
type merchantView struct {
	tenant.Merchant
	ReadyForEcommerce bool `json:"readyForEcommerce"`
}

func viewMerchant(m tenant.Merchant) merchantView {
	return merchantView{Merchant: m, ReadyForEcommerce: m.ReadyForEcommerce()}
}

// merchantFlags are the settings merchant create and update share.
type merchantFlags struct {
	name, country, capture                    *string
	upstream, clientKey, split, commissionAcc *string
	commissionBps, commissionFixed            *int64
	ecommerce, inactive, multiCaptures        *bool
}

func addMerchantFlags(f *flagSet, create bool) merchantFlags {
	req := ""
	if create {
		req = " (required)"
	}
	return merchantFlags{
		name:            f.str("name", "", "the merchant's name"+req),
		country:         f.str("country", "", "registered country: ISO 3166-1 alpha-2 code (`CC`) such as NL"+req),
		capture:         f.str("capture", "", "capture mode: `auto|manual` (create defaults to manual)"),
		upstream:        f.str("upstream-account", "", "the upstream merchant `account` (merchantAccount)"),
		clientKey:       f.str("client-key", "", "the upstream client `key`, returned to browsers as clientToken"),
		split:           f.str("split-account", "", "the merchant's balance `account` for split payments"),
		commissionAcc:   f.str("commission-account", "", "the platform's balance `account` receiving commission"),
		commissionBps:   f.int64("commission-bps", 0, "commission in basis points (`BPS`) of each amount, 0-10000"),
		commissionFixed: f.int64("commission-fixed", 0, "fixed commission per payment in minor units"),
		ecommerce:       f.boolean("ecommerce", create, "set up for ecommerce (--ecommerce=false to turn off)"),
		inactive:        f.boolean("inactive", false, "deactivated: its API keys are refused (--inactive=false reactivates)"),
		multiCaptures: f.boolean("multiple-partial-captures", false,
			"captures continue up to the authorised amount, as the platform account is set (--multiple-partial-captures=false: the first capture releases the rest)"),
	}
}

// apply copies the flags into m: all of them when all is true (create),
// otherwise only those given on the command line (update). It validates
// the values it copies.
func (mf merchantFlags) apply(f *flagSet, m *tenant.Merchant, all bool) error {
	use := func(name string) bool { return all || f.set[name] }
	if use("name") {
		m.Name = strings.TrimSpace(*mf.name)
		if m.Name == "" {
			return usagef(f.path, "--name must not be empty")
		}
	}
	if use("country") {
		cc, err := parseCountry(*mf.country)
		if err != nil {
			return usagef(f.path, "%v", err)
		}
		m.Country = cc
	}
	if use("capture") && (*mf.capture != "" || !all) {
		switch mode := tenant.CaptureMode(strings.ToLower(strings.TrimSpace(*mf.capture))); mode {
		case tenant.CaptureAuto, tenant.CaptureManual:
			m.CaptureMode = mode
		default:
			return usagef(f.path, "--capture must be auto or manual, not %q", *mf.capture)
		}
	}
	for _, s := range []struct {
		name string
		src  *string
		dst  *string
	}{
		{"upstream-account", mf.upstream, &m.UpstreamAccount},
		{"client-key", mf.clientKey, &m.ClientKey},
		{"split-account", mf.split, &m.SplitAccount},
		{"commission-account", mf.commissionAcc, &m.CommissionAccount},
	} {
		if use(s.name) {
			*s.dst = strings.TrimSpace(*s.src)
		}
	}
	if use("commission-bps") {
		if *mf.commissionBps < 0 || *mf.commissionBps > 10_000 {
			return usagef(f.path, "--commission-bps must be 0 to 10000, not %d", *mf.commissionBps)
		}
		m.CommissionBps = *mf.commissionBps
	}
	if use("commission-fixed") {
		if *mf.commissionFixed < 0 {
			return usagef(f.path, "--commission-fixed must not be negative")
		}
		m.CommissionFixed = *mf.commissionFixed
	}
	if use("ecommerce") {
		m.Ecommerce = *mf.ecommerce
	}
	if use("inactive") {
		m.Active = !*mf.inactive
	}
	if use("multiple-partial-captures") {
		m.MultiplePartialCaptures = *mf.multiCaptures
	}
	if (m.CommissionBps > 0 || m.CommissionFixed > 0) && m.CommissionAccount == "" {
		return usagef(f.path, "a commission needs --commission-account (the platform's balance account)")
	}
	return nil
}

// parseCountry returns the upper-case ISO 3166-1 alpha-2 code s, or an error.
func parseCountry(s string) (string, error) {
	cc := strings.ToUpper(strings.TrimSpace(s))
	bad := fmt.Errorf("--country must be an ISO 3166-1 alpha-2 country code such as NL, not %q", s)
	if len(cc) != 2 || cc[0] < 'A' || cc[0] > 'Z' || cc[1] < 'A' || cc[1] > 'Z' {
		return "", bad
	}
	r, err := language.ParseRegion(cc)
	if err != nil || !r.IsCountry() {
		return "", bad
	}
	return cc, nil
}

// warnMerchant prints what keeps m from taking payments.
func (c *cli) warnMerchant(m tenant.Merchant) {
	if !m.Active {
		c.warnf("merchant %s is inactive: its API keys are refused (reactivate with `%s merchant update --id %s --inactive=false`)", m.ID, prog, m.ID)
	}
	if !m.Ecommerce {
		return
	}
	var missing []string
	for _, x := range []struct{ flag, v string }{
		{"--upstream-account", m.UpstreamAccount}, {"--client-key", m.ClientKey}, {"--split-account", m.SplitAccount},
	} {
		if x.v == "" {
			missing = append(missing, x.flag)
		}
	}
	if len(missing) > 0 {
		verb := "are"
		if len(missing) == 1 {
			verb = "is"
		}
		c.warnf("merchant %s is not ready for ecommerce until %s %s set (its API calls get 422 yp_5003)", m.ID, strings.Join(missing, ", "), verb)
	}
}

// printMerchant prints one merchant.
func (c *cli) printMerchant(asJSON bool, m tenant.Merchant) error {
	return c.show(asJSON, viewMerchant(m), func(t *table) { merchantRows(t, m) })
}

func merchantRows(t *table, m tenant.Merchant) {
	t.row("id", m.ID)
	t.row("name", m.Name)
	t.row("country", m.Country)
	t.row("active", yesNo(m.Active))
	t.row("capture", string(m.CaptureMode))
	t.row("multiple partial captures", yesNo(m.MultiplePartialCaptures))
	t.row("ecommerce", yesNo(m.Ecommerce))
	t.row("ready for ecommerce", yesNo(m.ReadyForEcommerce()))
	t.row("upstream account", m.UpstreamAccount)
	t.row("client key", m.ClientKey)
	t.row("split account", m.SplitAccount)
	t.row("commission account", m.CommissionAccount)
	t.row("commission", fmt.Sprintf("%d bps + %d minor units", m.CommissionBps, m.CommissionFixed))
	t.row("created", fmtTime(m.CreatedAt))
}

const merchantIDUsage = "merchant `ID` (A-Z a-z 0-9 _ -, at most 64 characters)"

func (c *cli) merchantCreate(ctx context.Context, path string, args []string) error {
	f := c.newFlags(path, "--name NAME --country CC [flags]",
		"Creates a merchant, active and set up for ecommerce unless told otherwise.\n"+
			"Without --upstream-account, --client-key and --split-account it cannot take payments yet.")
	id := f.str("id", "", merchantIDUsage+"; generated (m_…) when omitted")
	mf := addMerchantFlags(f, true)
	if err := f.parse(args, "name", "country"); err != nil {
		return err
	}
	m := tenant.Merchant{ID: strings.TrimSpace(*id)}
	if m.ID != "" {
		if err := provision.ValidID("--id", m.ID); err != nil {
			return usagef(path, "%v", err)
		}
	}
	if err := mf.apply(f, &m, true); err != nil {
		return err
	}
	return c.withStore(ctx, func(s *session) error {
		if m.ID != "" {
			_, err := s.tenants().GetMerchant(ctx, m.ID)
			if err == nil {
				return fmt.Errorf("merchant %q already exists (change it with `%s merchant update --id %s`)", m.ID, prog, m.ID)
			}
			if !errors.Is(err, storeerr.ErrNotFound) {
				return fmt.Errorf("read merchant %q: %w", m.ID, err)
			}
		}
		m, err := s.prov.PutMerchant(ctx, m)
		if err != nil {
			return fmt.Errorf("create merchant: %w", err)
		}
		c.warnMerchant(m)
		return c.printMerchant(*f.json, m)
	})
}

func (c *cli) merchantUpdate(ctx context.Context, path string, args []string) error {
	f := c.newFlags(path, "--id ID [flags]",
		"Changes the settings given on the command line and leaves the others as they are.")
	id := f.str("id", "", merchantIDUsage+" (required)")
	mf := addMerchantFlags(f, false)
	if err := f.parse(args, "id"); err != nil {
		return err
	}
	if !f.anySetExcept("id") {
		return usagef(path, "nothing to change: give at least one setting flag")
	}
	return c.withMerchant(ctx, *id, func(s *session, m tenant.Merchant) error {
		if err := mf.apply(f, &m, false); err != nil {
			return err
		}
		m, err := s.prov.PutMerchant(ctx, m)
		if err != nil {
			return fmt.Errorf("update merchant: %w", err)
		}
		c.warnMerchant(m)
		return c.printMerchant(*f.json, m)
	})
}

func (c *cli) merchantList(ctx context.Context, path string, args []string) error {
	f := c.newFlags(path, "[--json]", "Lists every merchant, sorted by id.")
	if err := f.parse(args); err != nil {
		return err
	}
	return c.withStore(ctx, func(s *session) error {
		ms, err := s.tenants().ListMerchants(ctx)
		if err != nil {
			return fmt.Errorf("list merchants: %w", err)
		}
		return c.show(*f.json, mapped(ms, viewMerchant), func(t *table) {
			t.row("ID", "NAME", "COUNTRY", "ACTIVE", "CAPTURE", "ECOMMERCE", "READY", "COMMISSION", "CREATED")
			for _, m := range ms {
				t.row(m.ID, m.Name, m.Country, yesNo(m.Active), string(m.CaptureMode), yesNo(m.Ecommerce),
					yesNo(m.ReadyForEcommerce()), strconv.FormatInt(m.CommissionBps, 10)+" bps + "+strconv.FormatInt(m.CommissionFixed, 10),
					fmtTime(m.CreatedAt))
			}
		})
	})
}

// merchantSummary is what merchant show prints.
type merchantSummary struct {
	Merchant      merchantView  `json:"merchant"`
	Sites         []tenant.Site `json:"sites"`
	ActiveKeys    int           `json:"activeKeys"`
	RevokedKeys   int           `json:"revokedKeys"`
	Subscriptions int           `json:"subscriptions"`
	Enabled       int           `json:"enabledSubscriptions"`
}

func (c *cli) merchantShow(ctx context.Context, path string, args []string) error {
	f := c.newFlags(path, "--id ID [--json]", "Shows a merchant, its sites and how many keys and webhook subscriptions it has.")
	id := f.str("id", "", merchantIDUsage+" (required)")
	if err := f.parse(args, "id"); err != nil {
		return err
	}
	return c.withMerchant(ctx, *id, func(s *session, m tenant.Merchant) error {
		sites, err := s.tenants().ListSites(ctx, m.ID)
		if err != nil {
			return fmt.Errorf("list sites: %w", err)
		}
		sum := merchantSummary{Merchant: viewMerchant(m), Sites: nonNil(sites)}
		keys, err := s.tenants().ListAPIKeys(ctx, m.ID)
		if err != nil {
			return fmt.Errorf("list API keys: %w", err)
		}
		for _, k := range keys {
			if k.Revoked() {
				sum.RevokedKeys++
			} else {
				sum.ActiveKeys++
			}
		}
		subs, err := s.tenants().ListSubscriptions(ctx, m.ID)
		if err != nil {
			return fmt.Errorf("list subscriptions: %w", err)
		}
		sum.Subscriptions = len(subs)
		for _, sub := range subs {
			if sub.Enabled {
				sum.Enabled++
			}
		}
		return c.show(*f.json, sum, func(t *table) {
			merchantRows(t, m)
			siteIDs := mapped(sum.Sites, func(s tenant.Site) string { return s.ID })
			t.row("sites", strings.TrimSpace(fmt.Sprintf("%d %s", len(siteIDs), strings.Join(siteIDs, ","))))
			t.row("API keys", fmt.Sprintf("%d active, %d revoked", sum.ActiveKeys, sum.RevokedKeys))
			t.row("subscriptions", fmt.Sprintf("%d (%d enabled)", sum.Subscriptions, sum.Enabled))
		})
	})
}

func (c *cli) merchantDeactivate(ctx context.Context, path string, args []string) error {
	f := c.newFlags(path, "--id ID [--json]",
		"Deactivates a merchant: every API call with its keys is refused (404 yp_3005).\n"+
			"Reactivate with `merchant update --id ID --inactive=false`.")
	id := f.str("id", "", merchantIDUsage+" (required)")
	if err := f.parse(args, "id"); err != nil {
		return err
	}
	return c.withMerchant(ctx, *id, func(s *session, m tenant.Merchant) error {
		if !m.Active {
			c.notef("merchant %s was already inactive", m.ID)
		} else {
			m.Active = false
			var err error
			if m, err = s.prov.PutMerchant(ctx, m); err != nil {
				return fmt.Errorf("deactivate merchant: %w", err)
			}
		}
		return c.printMerchant(*f.json, m)
	})
}

// shardStore is a store whose merchants' listings are write-sharded, each
// merchant with counts of its own (DynamoDB: docs/scale.md, Listings).
type shardStore interface {
	ListingShards(ctx context.Context, merchantID string) (dynamo.ListingShards, error)
	RaiseListingShards(ctx context.Context, merchantID string, deliveries, events int) (dynamo.ListingShards, error)
}

var _ shardStore = (*dynamo.Store)(nil)

// merchantShards shows or raises a merchant's listing shard counts.
func (c *cli) merchantShards(ctx context.Context, path string, args []string) error {
	f := c.newFlags(path, "--id ID [--deliveries N] [--events N] [--json]",
		"Shows a merchant's listing shard counts (DynamoDB), or raises them: a page of its webhook deliveries or event history "+
			"queries every shard, and each shard takes about 500 writes a second. Counts can only be raised (docs/scale.md, Listings).")
	id := f.str("id", "", merchantIDUsage+" (required)")
	deliveries := f.integer("deliveries", 0, fmt.Sprintf("raise the deliveries' count to N (1 … %d)", dynamo.MaxListingShards))
	events := f.integer("events", 0, fmt.Sprintf("raise the event history's count to N (1 … %d)", dynamo.MaxListingShards))
	if err := f.parse(args, "id"); err != nil {
		return err
	}
	if *deliveries < 0 || *events < 0 {
		return usagef(path, "--deliveries and --events: want a count ≥ 1")
	}
	return c.withMerchant(ctx, *id, func(s *session, m tenant.Merchant) error {
		st, ok := s.stores.Deliveries.(shardStore)
		if !ok {
			return fmt.Errorf("the %s store does not shard listings: a merchant's deliveries and events are read in order from one file", s.cfg.Store)
		}
		var got dynamo.ListingShards
		var err error
		if f.set["deliveries"] || f.set["events"] {
			got, err = st.RaiseListingShards(ctx, m.ID, *deliveries, *events)
		} else {
			got, err = st.ListingShards(ctx, m.ID)
		}
		if err != nil {
			return err
		}
		v := map[string]any{"merchantId": m.ID, "deliveries": got.Deliveries, "events": got.Events, "own": got.Own}
		return c.show(*f.json, v, func(t *table) {
			t.row("merchant", m.ID)
			t.row("delivery shards", fmt.Sprint(got.Deliveries))
			t.row("event history shards", fmt.Sprint(got.Events))
			if !got.Own {
				t.row("", "the store's counts: the merchant was created before counts of its own")
			}
		})
	})
}
