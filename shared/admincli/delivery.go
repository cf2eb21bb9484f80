package admincli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"

	"github.com/yp/paysvc/shared/app"
	"github.com/yp/paysvc/shared/storeerr"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/webhooks"
)

// webhookAdmin returns the webhook operations over the session's store and
// the configured queues (local queue, or SQS with PAYSVC_QUEUE_URL/PAYSVC_DLQ_URL).
func (c *cli) webhookAdmin(ctx context.Context, s *session) (*webhooks.Admin, error) {
	if c.server != nil { // the running server's queue, whose worker it wakes
		q := c.server.Queues
		return &webhooks.Admin{Deliveries: s.stores.Deliveries, Queue: q.Queue, DeadLetters: q.DeadLetters, Clock: c.clock}, nil
	}
	return app.NewWebhookAdmin(ctx, s.cfg, s.stores, c.clock, slog.New(slog.DiscardHandler))
}

func (c *cli) deliveryList(ctx context.Context, path string, args []string) error {
	f := c.newFlags(path, "--merchant ID [--status pending|failed|disabled|delivered] [--limit N] [--json]",
		"Lists a merchant's webhook deliveries, newest first, with attempts and the last error.\n"+
			"The merchant of one delivery (e.g. the deliveryId of a dead letter): delivery show --id ID.")
	merchantID := f.str("merchant", "", "the merchant's `ID` (required)")
	status := f.str("status", "", "only deliveries in this `status`")
	limit := f.integer("limit", 50, "at most `N` deliveries")
	if err := f.parse(args); err != nil {
		return err
	}
	if strings.TrimSpace(*merchantID) == "" {
		return usagef(path, "--merchant is required (the merchant of a delivery, e.g. a dead letter's deliveryId: `%s delivery show --id ID`)", prog)
	}
	st := webhooks.Status(strings.TrimSpace(*status))
	if st != "" && !slices.Contains(webhooks.Statuses, st) {
		return usagef(path, "--status must be one of pending, failed, disabled, delivered")
	}
	if *limit < 1 || *limit > 1000 {
		return usagef(path, "--limit must be 1 to 1000")
	}
	return c.withMerchant(ctx, *merchantID, func(s *session, m tenant.Merchant) error {
		a, err := c.webhookAdmin(ctx, s)
		if err != nil {
			return err
		}
		list, err := a.ListDeliveries(ctx, m.ID, st, *limit)
		if err != nil {
			return fmt.Errorf("list deliveries: %w", err)
		}
		for i := range list {
			list[i].Payload = nil // the notification itself is not for listings
		}
		return c.show(*f.json, list, func(t *table) {
			t.row("ID", "EVENT", "PSP REFERENCE", "STATUS", "ATTEMPTS", "LAST STATUS", "LAST ERROR", "NEXT ATTEMPT", "CREATED")
			for _, d := range list {
				last := ""
				if d.LastStatusCode != 0 {
					last = fmt.Sprint(d.LastStatusCode)
				}
				t.row(d.ID, d.EventCode, d.PSPReference, string(d.Status), fmt.Sprint(d.Attempts), last, d.LastError,
					fmtTimePtr(d.NextAttemptAt), fmtTime(d.CreatedAt))
			}
		})
	})
}

// deliveryView is a delivery as delivery show prints it: without its
// payload (the notification; lookups show the payment).
type deliveryView struct {
	webhooks.Delivery
	Payload json.RawMessage `json:"payload,omitempty"`
}

func (c *cli) deliveryShow(ctx context.Context, path string, args []string) error {
	f := c.newFlags(path, "--id DELIVERY_ID [--json]",
		"Shows one webhook delivery by its id (the X-Webhook-Id; the deliveryId of a dead letter):\n"+
			"its merchant and subscription, status, attempts and the last error, then its kept attempts\n"+
			"(the last 10, newest first: time, answer, error, signature sent, start of the answer).")
	id := f.str("id", "", "the delivery `ID` (msg_…; required)")
	if err := f.parse(args, "id"); err != nil {
		return err
	}
	return c.withStore(ctx, func(s *session) error {
		d, err := s.stores.Deliveries.GetDelivery(ctx, strings.TrimSpace(*id))
		if errors.Is(err, storeerr.ErrNotFound) {
			return fmt.Errorf("unknown delivery %q (deliveries are kept 180 days)", *id)
		}
		if err != nil {
			return fmt.Errorf("read delivery %q: %w", *id, err)
		}
		return c.show(*f.json, deliveryView{Delivery: d}, func(t *table) {
			t.row("id", d.ID)
			t.row("merchant", d.MerchantID)
			t.row("subscription", d.SubscriptionID)
			t.row("event", d.EventCode)
			t.row("psp reference", d.PSPReference)
			t.row("status", string(d.Status))
			t.row("attempts", fmt.Sprint(d.Attempts))
			if d.LastStatusCode != 0 {
				t.row("last status", fmt.Sprint(d.LastStatusCode))
			}
			t.row("last error", d.LastError)
			t.row("last attempt", fmtTimePtr(d.LastAttemptAt))
			t.row("next attempt", fmtTimePtr(d.NextAttemptAt))
			t.row("redrives", fmt.Sprint(d.Redrives))
			t.row("created", fmtTime(d.CreatedAt))
			printAttempts(&t.text, d.History)
		})
	})
}

// printAttempts prints a delivery's kept attempts, newest first: number,
// time, answer, duration and error, the signature sent and the start of
// the receiver's answer (quoted, on one line).
func printAttempts(w io.Writer, h []webhooks.AttemptRecord) {
	if len(h) > 0 {
		fmt.Fprintf(w, "\nattempts kept (the last %d, newest first; of each answer its first %d bytes):\n", webhooks.MaxHistory, webhooks.MaxBodyPrefix)
	}
	for _, a := range slices.Backward(h) {
		answer := "no answer"
		if a.StatusCode != 0 {
			answer = "HTTP " + strconv.Itoa(a.StatusCode)
		}
		fmt.Fprintf(w, "attempt %d  %s  %s  %d ms", a.Number, fmtTime(a.At), answer, a.DurationMS)
		if a.Error != "" {
			fmt.Fprintf(w, "  %s", a.Error)
		}
		body := strconv.Quote(a.Body)
		if a.Body == "" {
			body = "(no body)"
		} else if a.Truncated {
			body += " (truncated)"
		}
		fmt.Fprintf(w, "\n  %s: %s\n  answer: %s\n", webhooks.HeaderSignature, a.Signature, body)
	}
}

func (c *cli) deliveryRedrive(ctx context.Context, path string, args []string) error {
	f := c.newFlags(path, "--merchant ID [--id DELIVERY_ID] [--include-disabled] [--json]",
		"Resets failed deliveries of a merchant (or one delivery) to pending with a new set of attempts\n"+
			"and queues them. The X-Webhook-Id stays the same, so receivers still deduplicate. In a running\n"+
			"local server, --id of a pending delivery makes its next attempt now (as delivery retry).")
	merchantID := f.str("merchant", "", "the merchant's `ID` (required)")
	id := f.str("id", "", "only this delivery `ID`")
	includeDisabled := f.boolean("include-disabled", false, "also redrive deliveries stopped because the subscription was disabled")
	if err := f.parse(args, "merchant"); err != nil {
		return err
	}
	return c.withMerchant(ctx, *merchantID, func(s *session, m tenant.Merchant) error {
		if did := strings.TrimSpace(*id); c.server != nil && did != "" {
			if d, err := s.stores.Deliveries.GetDelivery(ctx, did); err == nil && d.MerchantID == m.ID && d.Status == webhooks.StatusPending {
				return c.retryNow(ctx, m.ID, did, *f.json)
			}
		}
		a, err := c.webhookAdmin(ctx, s)
		if err != nil {
			return err
		}
		ids, err := a.RedriveDeliveries(ctx, m.ID, webhooks.RedriveOptions{DeliveryID: strings.TrimSpace(*id), IncludeDisabled: *includeDisabled})
		if errors.Is(err, storeerr.ErrNotFound) {
			return fmt.Errorf("unknown delivery %q for merchant %s", *id, m.ID)
		}
		if err != nil {
			return fmt.Errorf("redrive: %w", err)
		}
		if *f.json {
			return c.printJSON(map[string]any{"redriven": nonNil(ids)})
		}
		fmt.Fprintf(c.stdout, "redriven %d deliveries\n", len(ids))
		for _, x := range ids {
			fmt.Fprintln(c.stdout, x)
		}
		return nil
	})
}

func (c *cli) deliveryRedriveDLQ(ctx context.Context, path string, args []string) error {
	f := c.newFlags(path, "[--json]",
		"Reads every message of the dead-letter queue, gives its delivery a new set of attempts and\n"+
			"deletes the dead letter. Use this, not the queue's own redrive: a moved message whose\n"+
			"delivery is marked failed would be dropped.")
	if err := f.parse(args); err != nil {
		return err
	}
	return c.withStore(ctx, func(s *session) error {
		a, err := c.webhookAdmin(ctx, s)
		if err != nil {
			return err
		}
		res, err := a.RedriveDeadLetterQueue(ctx)
		if err != nil {
			return fmt.Errorf("redrive the dead-letter queue: %w", err)
		}
		if *f.json {
			return c.printJSON(map[string]any{"redriven": nonNil(res.Redriven), "dropped": res.Dropped, "kept": res.Kept})
		}
		fmt.Fprintf(c.stdout, "redriven %d, dropped %d (nothing to do), kept %d (unreadable or failed)\n", len(res.Redriven), res.Dropped, res.Kept)
		return nil
	})
}

func (c *cli) deliveryRetry(ctx context.Context, path string, args []string) error {
	f := c.newFlags(path, "--merchant ID --id DELIVERY_ID [--json]",
		"Makes the next attempt of a delivery now, in a running local server (make run): a failed or\n"+
			"disabled one as POST /v1/ecom/webhook-deliveries/{id}/retry does, a pending one (waiting\n"+
			"for its next scheduled attempt) by moving that attempt to now. Same X-Webhook-Id.\n"+
			"Deployed stages: the retry endpoint, or delivery redrive.")
	merchantID := f.str("merchant", "", "the merchant's `ID` (required)")
	id := f.str("id", "", "the delivery `ID` (msg_…; required)")
	if err := f.parse(args, "merchant", "id"); err != nil {
		return err
	}
	if c.server == nil {
		return errNeedsLocalServer("delivery retry")
	}
	return c.retryNow(ctx, strings.TrimSpace(*merchantID), strings.TrimSpace(*id), *f.json)
}

// retryNow makes a delivery's next attempt now, in the running server.
func (c *cli) retryNow(ctx context.Context, merchantID, id string, asJSON bool) error {
	r, err := c.server.Local.RetryNow(ctx, merchantID, id)
	if err != nil {
		return err
	}
	if asJSON {
		return c.printJSON(r)
	}
	_, err = fmt.Fprintf(c.stdout, "delivery %s (%s): attempt %d now, %s\n", r.DeliveryID, r.Status, r.NextAttempt, r.How)
	return err
}
