package admincli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/yp/paysvc/shared/adminapi"
	"github.com/yp/paysvc/shared/config"
	"github.com/yp/paysvc/shared/upstream/simulator"
	"github.com/yp/paysvc/shared/webhooks/target"
	"github.com/yp/paysvc/shared/webhooks/verify"
)

// isHelp reports whether args ask for help only (answered without a store).
func isHelp(args []string) bool {
	if len(args) == 0 || args[0] == "help" {
		return true
	}
	return slices.ContainsFunc(args, func(a string) bool { return a == "-h" || a == "-help" || a == "--help" })
}

// localServer returns a client of the running local server's admin API
// when the configured store is the embedded one and a local server serves
// on it; nil otherwise (DynamoDB, no server, or a server that stopped
// without removing its files).
func (c *cli) localServer(ctx context.Context) *adminapi.Client {
	cfg, err := config.FromEnv(c.getenv, config.StoreEmbedded)
	if err != nil || cfg.Store != config.StoreEmbedded {
		return nil
	}
	e, ok, err := adminapi.ReadFiles(cfg.DataDir)
	if err != nil {
		c.warnf("%v", err)
		return nil
	}
	if !ok {
		return nil
	}
	cl := &adminapi.Client{Endpoint: e}
	if _, err := cl.Status(ctx); err != nil {
		return nil // gone: the store is opened directly
	}
	return cl
}

// runRemote runs args in the local server and relays its output.
func (c *cli) runRemote(ctx context.Context, cl *adminapi.Client, args []string) int {
	res, err := cl.Exec(ctx, args)
	if err != nil {
		fmt.Fprintf(c.stderr, "%s: %v\n", prog, err)
		return ExitError
	}
	_, _ = io.WriteString(c.stdout, res.Stdout)
	_, _ = io.WriteString(c.stderr, res.Stderr)
	return res.ExitCode
}

// errNeedsLocalServer is the error of a command that only a running local
// server can do.
func errNeedsLocalServer(cmd string) error {
	return fmt.Errorf("%s needs a running local server: start `make run` (in the test environment, on this data dir: PAYSVC_DATA_DIR); "+
		"deployed stages have the webhook endpoints API and `delivery redrive` instead", cmd)
}

func (c *cli) trigger(ctx context.Context, path string, args []string) error {
	f := c.newFlags(path, "EVENT_CODE [--psp PSP_REFERENCE] [--merchant ID] [--set FIELD=VALUE]... [--json]",
		"Sends a signed upstream notification through the running local server, as the platform would:\n"+
			"built like the simulator's (the payment's amount, reference and merchant account), --set\n"+
			"applied, signed with the upstream HMAC key and posted to the notifications endpoint. The\n"+
			"service handles it as any notification: payment record, event, webhooks, listeners.\n"+
			"Without --psp, AUTHORISATION and OFFER_CLOSED are for a new payment and other codes for the\n"+
			"merchant's latest one. A modification's code is for the payment's latest operation of its\n"+
			"kind (CAPTURE_FAILED: its latest capture), or a new pspReference when none matches; it says\n"+
			"which, then what became of each webhook: delivered, failed (why) or pending. Examples: trigger CAPTURE --psp PSP; trigger AUTHORISATION --set\n"+
			"success=false --set reason=Refused; trigger REFUND --psp PSP --set amount.value=500.")
	psp := f.str("psp", "", "the payment's `PSP_REFERENCE`")
	merchantID := f.str("merchant", "", "the merchant's `ID` (default: the only merchant)")
	var sets []string
	f.order = append(f.order, "set")
	f.Func("set", "edit a field of the item before it is signed, `FIELD=VALUE` (repeatable): success=false, amount.value=500, reason=…, additionalData.KEY=…",
		func(v string) error { sets = append(sets, v); return nil })
	code, rest := "", args
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		code, rest = args[0], args[1:]
	}
	if err := f.parse(rest); err != nil {
		return err
	}
	if code == "" {
		return usagef(path, "the EVENT_CODE is required first, e.g. %s trigger AUTHORISATION", prog)
	}
	if c.server == nil {
		return errNeedsLocalServer("trigger")
	}
	res, err := c.server.Local.Trigger(ctx, adminapi.TriggerRequest{MerchantID: *merchantID, EventCode: code, PSPReference: *psp, Set: sets})
	if err != nil {
		return err
	}
	if *f.json {
		return c.printJSON(res)
	}
	it := res.Item
	fmt.Fprintf(c.stdout, "sent %s (success %s, %s) for payment %s of %s: %d %s\n",
		it.EventCode, it.Success, simulator.FormatAmount(it.Amount), res.PaymentPSPReference, res.MerchantID, res.Status, res.Answer)
	if res.Operation != "" {
		fmt.Fprintf(c.stdout, "  operation: %s\n", res.Operation)
	}
	switch {
	case len(res.Events) == 0 && res.DuplicateOf != "":
		fmt.Fprintf(c.stdout, "no new event: the service had this notification already (event %s) and takes one once; nothing was sent\n", res.DuplicateOf)
	case len(res.Events) == 0:
		fmt.Fprintf(c.stdout, "no event recorded for %s: the notification could not be routed to it (see `%s notification list --unroutable`)\n", res.MerchantID, prog)
	}
	for _, e := range res.Events {
		n := 0
		fmt.Fprintf(c.stdout, "event %s recorded; its webhooks:\n", e.ID)
		for _, t := range res.Targets {
			if t.EventID == e.ID {
				fmt.Fprintf(c.stdout, "  %s\n", t)
				n++
			}
		}
		if n == 0 {
			fmt.Fprintf(c.stdout, "  none: %s has no subscription for it and no listen runs\n", res.MerchantID)
		}
	}
	return nil
}

// forwardTimeout bounds one forwarded webhook, as a delivery is bounded.
const forwardTimeout = 15 * time.Second

func (c *cli) listen(ctx context.Context, path string, args []string) error {
	f := c.newFlags(path, "[--forward-to URL] [--merchant ID] [--events CODES] [--json]",
		"Receives every webhook of a merchant while it runs (Ctrl-C stops it), through the running\n"+
			"local server: each event as a subscription would receive it, signed with a secret made for\n"+
			"this listen and printed at the start. It prints each webhook and checks its signature;\n"+
			"--forward-to POSTs them to your receiver on this machine instead. No subscription is\n"+
			"created and nothing is stored.\n"+
			"With --json, one JSON line per webhook. For the local test environment; deployed stages\n"+
			"deliver to subscriptions (webhook endpoints).")
	forward := f.str("forward-to", "", "the `URL` on this machine (localhost or a loopback address) to POST each webhook to, e.g. http://127.0.0.1:4000/webhooks (default: print them)")
	merchantID := f.str("merchant", "", "the merchant's `ID` (default: the only merchant)")
	events := f.str("events", "", "comma-separated event `CODES` to forward (default: every event)")
	if err := f.parse(args); err != nil {
		return err
	}
	fwd := "" // the receiver's URL; "": print the webhooks
	if raw := strings.TrimSpace(*forward); raw != "" {
		t, err := target.Check(raw, true)
		if err != nil || !t.Local {
			return usagef(path, "--forward-to %q: an http:// or https:// URL on this machine (localhost or a loopback address such as 127.0.0.1)", *forward)
		}
		fwd = t.URL.String()
	}
	codes, err := parseEvents(path, *events)
	if err != nil {
		return err
	}
	if c.server != nil {
		// Through exec the server would forward, and hold exec's lock for
		// as long as the listen runs.
		return errors.New("listen streams to the CLI (GET /_admin/v1/listen); it does not run through exec")
	}
	cl := c.localServer(ctx)
	if cl == nil {
		return errNeedsLocalServer("listen")
	}
	client := &http.Client{Timeout: forwardTimeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	var listenerID, secret string
	ready := func(m adminapi.StreamMessage) {
		listenerID, secret = m.ListenerID, m.Secret
		if *f.json {
			_ = c.printJSONLine(map[string]string{"type": "ready", "merchantId": m.MerchantID, "listenerId": m.ListenerID, "forwardTo": fwd, "secret": m.Secret})
			return
		}
		if fwd == "" {
			fmt.Fprintf(c.stdout, "Ready: printing the webhooks of %s and checking their signatures (Ctrl-C to stop; --forward-to URL sends them to your receiver).\n", m.MerchantID)
		} else {
			fmt.Fprintf(c.stdout, "Ready: forwarding the webhooks of %s to %s (Ctrl-C to stop).\n", m.MerchantID, fwd)
		}
		fmt.Fprintf(c.stdout, "Webhook signing secret of this listen (verify the webhooks with it): %s\n", m.Secret)
	}
	// report tells the server what became of a webhook (trigger says it).
	report := func(wh adminapi.Webhook, delivered bool, detail string) {
		_ = cl.Report(ctx, adminapi.ListenReport{ListenerID: listenerID, EventID: wh.EventID, Delivered: delivered, Detail: detail})
	}
	forwardOne := func(wh adminapi.Webhook) error {
		res := forwarded{Type: "webhook", EventID: wh.EventID, EventCode: wh.EventCode, PSPReference: wh.PSPReference,
			WebhookID: wh.Headers.Get("X-Webhook-Id"), Missed: wh.Missed}
		if fwd == "" {
			// Checked as a receiver checks it (docs/webhooks.md).
			res.Signature = "verified"
			if err := verify.Verify(secret, wh.Headers, wh.Body, c.clock.Now(), verify.DefaultTolerance); err != nil {
				res.Signature = "INVALID: " + err.Error()
			}
			err := c.printWebhook(res, wh, *f.json)
			report(wh, err == nil && res.Signature == "verified", "printed, signature "+res.Signature)
			return err
		}
		start := time.Now()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, fwd, bytes.NewReader(wh.Body))
		if err == nil {
			req.Header = wh.Headers.Clone()
			req.Header.Set("Content-Type", "application/json")
			var resp *http.Response
			if resp, err = client.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
				resp.Body.Close()
				res.Status = resp.StatusCode
			}
		}
		res.LatencyMs = time.Since(start).Milliseconds()
		if err != nil {
			res.Error = err.Error()
			report(wh, false, res.Error)
		} else {
			report(wh, res.Status/100 == 2, fmt.Sprintf("your receiver answered %d", res.Status))
		}
		if *f.json {
			return c.printJSONLine(res)
		}
		if wh.Missed > 0 {
			fmt.Fprintf(c.stdout, "(%d webhooks missed: this listen fell behind)\n", wh.Missed)
		}
		outcome := fmt.Sprintf("%d", res.Status)
		if res.Error != "" {
			outcome = "failed: " + res.Error
		}
		_, err = fmt.Fprintf(c.stdout, "%s  %-24s %-16s %s  -> %s (%d ms)\n",
			time.Now().Format("15:04:05"), wh.EventCode, wh.PSPReference, res.WebhookID, outcome, res.LatencyMs)
		return err
	}
	return cl.Listen(ctx, strings.TrimSpace(*merchantID), fwd, codes, ready, forwardOne)
}

// printWebhook prints a webhook listen does not forward: a line, then its
// body; with asJSON one line with the body in it.
func (c *cli) printWebhook(res forwarded, wh adminapi.Webhook, asJSON bool) error {
	if asJSON {
		res.Body = wh.Body
		return c.printJSONLine(res)
	}
	_, err := fmt.Fprintf(c.stdout, "%s  %-24s %-16s %s  signature %s\n  %s\n", time.Now().Format("15:04:05"), wh.EventCode, wh.PSPReference, res.WebhookID, res.Signature, wh.Body)
	return err
}

// forwarded is what listen --json prints for each webhook.
type forwarded struct {
	Type         string `json:"type"`
	EventID      string `json:"eventId"`
	EventCode    string `json:"eventCode"`
	PSPReference string `json:"pspReference"`
	WebhookID    string `json:"webhookId"`
	Status       int    `json:"status,omitempty"`
	LatencyMs    int64  `json:"latencyMs"`
	Error        string `json:"error,omitempty"`
	Missed       int    `json:"missed,omitempty"`
	// Signature is "verified" (or why not), when it is printed.
	Signature string `json:"signature,omitempty"`
	// Body is the webhook's body, when it is printed rather than forwarded.
	Body json.RawMessage `json:"body,omitempty"`
}
