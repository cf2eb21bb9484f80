package admincli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/yp/paysvc/shared/provision"
	"github.com/yp/paysvc/shared/storeerr"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/webhooks/target"
)

// secretNotice is printed with every new webhook secret.
const secretNotice = "store it now, it cannot be shown again"

// maxOverlap bounds --overlap: an old secret should not sign for long.
const maxOverlap = 30 * 24 * time.Hour

// secretMeta describes an active secret without its value.
type secretMeta struct {
	CreatedAt time.Time  `json:"createdAt"`
	ExpiresAt *time.Time `json:"expiresAt,omitempty"` // nil = until rotated
}

// subView is a subscription as printed: never its secrets' values.
type subView struct {
	ID             string       `json:"id"`
	MerchantID     string       `json:"merchantId"`
	URL            string       `json:"url"`
	EventCodes     []string     `json:"eventCodes"` // empty = every event
	Enabled        bool         `json:"enabled"`
	DisabledReason string       `json:"disabledReason,omitempty"`
	ActiveSecrets  int          `json:"activeSecrets"`
	Secrets        []secretMeta `json:"secrets"` // the active ones, newest first
	CreatedAt      time.Time    `json:"createdAt"`
	UpdatedAt      *time.Time   `json:"updatedAt,omitempty"`
}

func viewSub(s tenant.Subscription, now time.Time) subView {
	v := subView{
		ID: s.ID, MerchantID: s.MerchantID, URL: s.URL, EventCodes: nonNil(s.EventCodes), Enabled: s.Enabled,
		DisabledReason: s.DisabledReason, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt,
		Secrets: mapped(s.ActiveSecrets(now), func(sec tenant.Secret) secretMeta {
			return secretMeta{CreatedAt: sec.CreatedAt, ExpiresAt: sec.ExpiresAt}
		}),
	}
	v.ActiveSecrets = len(v.Secrets)
	return v
}

// createdSub is what subscription create and rotate-secret print: the
// subscription and, once, the new secret.
type createdSub struct {
	Subscription subView `json:"subscription"`
	Secret       string  `json:"secret"`
	Notice       string  `json:"notice"`
}

// expirySummary lists when each active secret stops signing, newest first.
func expirySummary(v subView) string {
	parts := mapped(v.Secrets, func(s secretMeta) string {
		return cmp.Or(fmtTimePtr(s.ExpiresAt), "never") // nil: until rotated
	})
	return strings.Join(parts, ",")
}

func subRows(t *table, v subView) {
	t.row("id", v.ID)
	t.row("merchant", v.MerchantID)
	t.row("url", v.URL)
	t.row("events", allOr(v.EventCodes))
	t.row("enabled", yesNo(v.Enabled))
	if !v.Enabled {
		t.row("disabled reason", v.DisabledReason)
	}
	t.row("active secrets", fmt.Sprint(v.ActiveSecrets))
	t.row("secret expiry", expirySummary(v))
	t.row("created", fmtTime(v.CreatedAt))
	t.row("updated", fmtTimePtr(v.UpdatedAt))
}

// checkWebhookURL validates a subscription target with the one validator
// (shared/webhooks/target): an https:// URL on port 443 whose host is a
// public name or address. With allowLocal, http:// or https:// targets on
// localhost or a loopback address (any port) are accepted too, and local
// reports it so a warning is shown.
func checkWebhookURL(raw string, allowLocal bool) (local bool, err error) {
	const rule = "webhook targets must be https:// URLs on port 443 with a public address " +
		"(http://127.0.0.1 or http://localhost only with --allow-insecure-local, for local runs, delivered by a local server unless PAYSVC_WEBHOOK_ALLOW_LOCAL=false)"
	t, err := target.Check(raw, allowLocal)
	if err != nil {
		return false, fmt.Errorf("--url %q: %v; %s", raw, err, rule)
	}
	return t.Local, nil
}

// parseEvents parses --events: upper-case event codes such as AUTHORISATION.
func parseEvents(path, s string) ([]string, error) {
	items := splitList(strings.ToUpper(s))
	for _, code := range items {
		ok := len(code) <= 64
		for i := 0; i < len(code) && ok; i++ {
			ch := code[i]
			ok = ch == '_' || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9')
		}
		if !ok {
			return nil, usagef(path, "--events: %q is not an event code (upper-case letters, digits and _, e.g. AUTHORISATION)", code)
		}
	}
	return items, nil
}

// subscription returns a merchant's subscription or an error naming it.
func (s *session) subscription(ctx context.Context, merchantID, id string) (tenant.Subscription, error) {
	sub, err := s.tenants().GetSubscription(ctx, merchantID, id)
	if errors.Is(err, storeerr.ErrNotFound) {
		return sub, fmt.Errorf("merchant %s has no subscription %q (see `%s subscription list --merchant %s`)", merchantID, id, prog, merchantID)
	}
	if err != nil {
		return sub, fmt.Errorf("read subscription %q: %w", id, err)
	}
	return sub, nil
}

// printNewSecret prints a subscription and its new secret, once.
func (c *cli) printNewSecret(asJSON bool, v subView, secret string) error {
	if asJSON {
		c.notef("The JSON output holds the webhook secret: %s.", secretNotice)
	}
	return c.show(asJSON, createdSub{Subscription: v, Secret: secret, Notice: secretNotice}, func(t *table) {
		subRows(t, v)
		fmt.Fprintf(&t.text, "\nWebhook signing secret (%s):\n\n    %s\n\n"+
			"The receiver verifies deliveries with it (Standard Webhooks signatures).\n", secretNotice, secret)
	})
}

func (c *cli) subCreate(ctx context.Context, path string, args []string) error {
	f := c.newFlags(path, "--merchant ID --url https://... [flags]",
		"Creates a webhook subscription and prints its signing secret (whsec_…) ONCE.\n"+
			"Targets must be https:// URLs on port 443 with a public address.")
	merchantID := f.str("merchant", "", "the merchant's `ID` (required)")
	rawURL := f.str("url", "", "the https:// `URL` deliveries are POSTed to (required)")
	events := f.str("events", "", "comma-separated event `CODES` to deliver, e.g. AUTHORISATION,CAPTURE (default: every event)")
	id := f.str("id", "", "subscription `ID` (A-Z a-z 0-9 _ -); generated (sub_…) when omitted")
	allowLocal := f.boolean("allow-insecure-local", false,
		"accept http:// or https:// targets on localhost / 127.0.0.1 / ::1 (local development only; refused with PAYSVC_ENVIRONMENT=live)")
	if err := f.parse(args, "merchant", "url"); err != nil {
		return err
	}
	if *allowLocal && tenant.Environment(strings.TrimSpace(c.getenv("PAYSVC_ENVIRONMENT"))) == tenant.EnvLive {
		return usagef(path, "--allow-insecure-local is refused in the live environment (PAYSVC_ENVIRONMENT=live): "+
			"no live server delivers to a local target; give the merchant's public https:// URL")
	}
	target := strings.TrimSpace(*rawURL)
	local, err := checkWebhookURL(target, *allowLocal)
	if err != nil {
		return usagef(path, "%v", err)
	}
	codes, err := parseEvents(path, *events)
	if err != nil {
		return err
	}
	subID := strings.TrimSpace(*id)
	if subID != "" {
		if err := provision.ValidID("--id", subID); err != nil {
			return usagef(path, "%v", err)
		}
	}
	if local {
		c.warnf("%s is an insecure local target: only a local server delivers to it, and only with PAYSVC_WEBHOOK_ALLOW_LOCAL "+
			"unset (the default of `make run` in the test environment) or true; PAYSVC_WEBHOOK_ALLOW_LOCAL=false and every deployed stage refuse it", target)
	}
	return c.withMerchant(ctx, *merchantID, func(s *session, m tenant.Merchant) error {
		if subID != "" {
			_, err := s.tenants().GetSubscription(ctx, m.ID, subID)
			if err == nil {
				return fmt.Errorf("merchant %s already has subscription %q (rotate its secret with `%s subscription rotate-secret`)", m.ID, subID, prog)
			}
			if !errors.Is(err, storeerr.ErrNotFound) {
				return fmt.Errorf("read subscription %q: %w", subID, err)
			}
		}
		sub, secret, err := s.prov.PutSubscription(ctx, provision.SubscriptionSpec{
			ID: subID, MerchantID: m.ID, URL: target, EventCodes: codes, AllowLocal: *allowLocal,
		})
		if err != nil {
			return fmt.Errorf("create subscription: %w", err)
		}
		return c.printNewSecret(*f.json, viewSub(sub, c.clock.Now()), secret)
	})
}

func (c *cli) subList(ctx context.Context, path string, args []string) error {
	f := c.newFlags(path, "--merchant ID [--json]",
		"Lists a merchant's webhook subscriptions with how many secrets are active and when they expire.\n"+
			"Secrets are never shown.")
	merchantID := f.str("merchant", "", "the merchant's `ID` (required)")
	if err := f.parse(args, "merchant"); err != nil {
		return err
	}
	return c.withMerchant(ctx, *merchantID, func(s *session, m tenant.Merchant) error {
		subs, err := s.tenants().ListSubscriptions(ctx, m.ID)
		if err != nil {
			return fmt.Errorf("list subscriptions: %w", err)
		}
		now := c.clock.Now()
		views := mapped(subs, func(sub tenant.Subscription) subView { return viewSub(sub, now) })
		return c.show(*f.json, views, func(t *table) {
			t.row("ID", "URL", "EVENTS", "ENABLED", "ACTIVE SECRETS", "SECRET EXPIRY", "CREATED")
			for _, v := range views {
				enabled := yesNo(v.Enabled)
				if !v.Enabled && v.DisabledReason != "" {
					enabled += " (" + v.DisabledReason + ")"
				}
				t.row(v.ID, v.URL, allOr(v.EventCodes), enabled, fmt.Sprint(v.ActiveSecrets), expirySummary(v), fmtTime(v.CreatedAt))
			}
		})
	})
}

func (c *cli) subRotate(ctx context.Context, path string, args []string) error {
	f := c.newFlags(path, "--merchant ID --id SUB_ID [--overlap 24h] [--json]",
		"Adds a new signing secret and prints it ONCE. Deliveries are signed with every active secret,\n"+
			"so the previous secret keeps working until the overlap ends: switch the receiver within it.")
	merchantID := f.str("merchant", "", "the merchant's `ID` (required)")
	id := f.str("id", "", "the subscription's `ID` (required)")
	overlap := f.duration("overlap", 24*time.Hour, "how long the previous secret keeps signing, e.g. 24h (0 ends it now, at most 720h)")
	if err := f.parse(args, "merchant", "id"); err != nil {
		return err
	}
	if *overlap < 0 || *overlap > maxOverlap {
		return usagef(path, "--overlap must be between 0 and %s, not %s", maxOverlap, *overlap)
	}
	return c.withMerchant(ctx, *merchantID, func(s *session, m tenant.Merchant) error {
		sub, err := s.subscription(ctx, m.ID, strings.TrimSpace(*id))
		if err != nil {
			return err
		}
		secret, err := s.prov.RotateSecret(ctx, m.ID, sub.ID, *overlap)
		if err != nil {
			return fmt.Errorf("rotate the secret of %s: %w", sub.ID, err)
		}
		if sub, err = s.subscription(ctx, m.ID, sub.ID); err != nil {
			return err
		}
		now := c.clock.Now()
		if *overlap > 0 {
			c.notef("The previous secret keeps signing until %s.", fmtTime(now.Add(*overlap)))
		} else {
			c.notef("The previous secret no longer signs.")
		}
		return c.printNewSecret(*f.json, viewSub(sub, now), secret)
	})
}

// subSetEnabled is subscription enable (enable) and disable.
func (c *cli) subSetEnabled(enable bool) func(ctx context.Context, path string, args []string) error {
	return func(ctx context.Context, path string, args []string) error {
		desc := "Enables a webhook subscription: new notifications are delivered to it again."
		synopsis := "--merchant ID --id SUB_ID [--json]"
		if !enable {
			desc = "Disables a webhook subscription: nothing more is delivered to it until it is enabled."
			synopsis = "--merchant ID --id SUB_ID [--reason TEXT] [--json]"
		}
		f := c.newFlags(path, synopsis, desc)
		merchantID := f.str("merchant", "", "the merchant's `ID` (required)")
		id := f.str("id", "", "the subscription's `ID` (required)")
		reason := new(string) // enable takes none
		if !enable {
			reason = f.str("reason", "disabled by an operator", "why, shown by subscription list")
		}
		if err := f.parse(args, "merchant", "id"); err != nil {
			return err
		}
		return c.withMerchant(ctx, *merchantID, func(s *session, m tenant.Merchant) error {
			sub, err := s.subscription(ctx, m.ID, strings.TrimSpace(*id))
			if err != nil {
				return err
			}
			why := strings.TrimSpace(*reason)
			if sub.Enabled == enable && (enable || sub.DisabledReason == why) {
				c.notef("subscription %s was already %s", sub.ID, strings.TrimPrefix(path, "subscription ")+"d")
			} else if sub, err = s.prov.SetSubscriptionEnabled(ctx, m.ID, sub.ID, enable, why); err != nil {
				return fmt.Errorf("update subscription %s: %w", sub.ID, err)
			}
			v := viewSub(sub, c.clock.Now())
			return c.show(*f.json, v, func(t *table) { subRows(t, v) })
		})
	}
}
