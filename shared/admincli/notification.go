package admincli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/yp/paysvc/shared/app"
	"github.com/yp/paysvc/shared/notifications"
	"github.com/yp/paysvc/shared/storeerr"
)

// notificationRouter returns the receiver that lists and routes unroutable
// notifications over the session's store and the configured queues.
func (c *cli) notificationRouter(ctx context.Context, s *session) (*notifications.Receiver, error) {
	return app.NewNotificationRouter(ctx, s.cfg, s.stores, c.clock, slog.New(slog.DiscardHandler))
}

func (c *cli) notificationList(ctx context.Context, path string, args []string) error {
	f := c.newFlags(path, "(--unroutable | --account) [--limit N] [--json]",
		"Lists, oldest first, the upstream notifications no merchant could be found for\n"+
			"(--unroutable), with why: route them with `notification route` once their merchant\n"+
			"exists; or the account-level ones (--account: about no payment, e.g. REPORT_AVAILABLE,\n"+
			"whose PSP REFERENCE is the report's file name and REASON its download URL), kept for\n"+
			"operations and never routed.")
	unroutable := f.boolean("unroutable", false, "list the unroutable notifications")
	account := f.boolean("account", false, "list the account-level notifications")
	limit := f.integer("limit", 100, "at most `N` notifications")
	if err := f.parse(args); err != nil {
		return err
	}
	if *unroutable == *account {
		return usagef(path, "give exactly one of --unroutable and --account")
	}
	if *limit < 1 || *limit > 1000 {
		return usagef(path, "--limit must be 1 to 1000")
	}
	return c.withStore(ctx, func(s *session) error {
		r, err := c.notificationRouter(ctx, s)
		if err != nil {
			return err
		}
		list := r.ListUnroutable
		if *account {
			list = r.ListAccountLevel
		}
		evs, err := list(ctx, *limit)
		if err != nil {
			return err
		}
		return c.show(*f.json, evs, func(t *table) {
			if *account {
				t.row("ID", "EVENT", "PSP REFERENCE", "MERCHANT ACCOUNT", "RECEIVED", "REASON")
			} else {
				t.row("ID", "EVENT", "PSP REFERENCE", "PAYMENT", "MERCHANT ACCOUNT", "RECEIVED", "REASON")
			}
			for _, e := range evs {
				if *account {
					t.row(e.ID, e.Item.EventCode, e.Item.PSPReference, e.Item.MerchantAccountCode, fmtTime(e.ReceivedAt), e.Item.Reason)
				} else {
					t.row(e.ID, e.Item.EventCode, e.Item.PSPReference, e.PaymentPSP, e.Item.MerchantAccountCode, fmtTime(e.ReceivedAt), e.UnroutableReason)
				}
			}
		})
	})
}

func (c *cli) notificationRoute(ctx context.Context, path string, args []string) error {
	f := c.newFlags(path, "(--id EVENT_ID | --all) [--merchant ID [--site ID]] [--json]",
		"Processes unroutable notifications again: each is routed as on arrival (payment record,\n"+
			"routing metadata, session) — its merchant may exist now — and, when that still finds\n"+
			"no owner and --merchant is given, to that merchant (its upstream account must be the\n"+
			"notification's merchantAccountCode). The payment record is updated and the webhook\n"+
			"deliveries are created and queued. While `make run` runs, the command runs in it (its\n"+
			"admin API) and the deliveries start at once.")
	id := f.str("id", "", "the unroutable notification's `EVENT_ID` (see `notification list --unroutable`)")
	all := f.boolean("all", false, "every unroutable notification")
	merchantID := f.str("merchant", "", "route to this merchant `ID` when nothing else names one")
	siteID := f.str("site", "", "with --merchant: the payment's site `ID`")
	if err := f.parse(args); err != nil {
		return err
	}
	*id = strings.TrimSpace(*id)
	if (*id == "") == !*all {
		return usagef(path, "give exactly one of --id and --all")
	}
	if *siteID != "" && *merchantID == "" {
		return usagef(path, "--site needs --merchant")
	}
	var to *notifications.RouteTo
	if m := strings.TrimSpace(*merchantID); m != "" {
		to = &notifications.RouteTo{MerchantID: m, SiteID: strings.TrimSpace(*siteID)}
	}
	return c.withStore(ctx, func(s *session) error {
		if to != nil {
			if _, err := s.merchant(ctx, to.MerchantID); err != nil {
				return err
			}
		}
		r, err := c.notificationRouter(ctx, s)
		if err != nil {
			return err
		}
		ids := []string{*id}
		if *all {
			list, err := r.ListUnroutable(ctx, 0)
			if err != nil {
				return err
			}
			ids = mapped(list, func(e notifications.Event) string { return e.ID })
		}
		type result struct {
			ID         string   `json:"id"`
			Routed     bool     `json:"routed"`
			MerchantID string   `json:"merchantId,omitempty"`
			Deliveries []string `json:"deliveryIds,omitempty"`
			Error      string   `json:"error,omitempty"`
		}
		results := []result{}
		failed := 0
		for _, x := range ids {
			ev, err := r.Route(ctx, x, to)
			res := result{ID: x, Routed: err == nil, MerchantID: ev.MerchantID, Deliveries: ev.DeliveryIDs}
			if errors.Is(err, storeerr.ErrNotFound) {
				err = errors.New("unknown notification event")
			}
			if err != nil {
				res.Error = err.Error()
				failed++
			}
			results = append(results, res)
		}
		err = c.show(*f.json, results, func(t *table) {
			for _, res := range results {
				if res.Routed {
					fmt.Fprintf(&t.text, "routed %s to %s (%d deliveries)\n", res.ID, res.MerchantID, len(res.Deliveries))
				} else {
					fmt.Fprintf(&t.text, "not routed %s: %s\n", res.ID, res.Error)
				}
			}
		})
		if err != nil {
			return err
		}
		if failed > 0 {
			return fmt.Errorf("%d of %d notifications not routed", failed, len(ids))
		}
		return nil
	})
}
