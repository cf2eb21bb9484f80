package adminapi

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/yp/paysvc/shared/httpapi"
	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/upstream"
	"github.com/yp/paysvc/shared/webhooks"
)

// EventCodes are the notification event codes the service acts on, offered
// by the dashboard; Trigger sends any other upper-case code too.
var EventCodes = []string{
	upstream.EventAuthorisation, upstream.EventCapture, upstream.EventCaptureFailed, upstream.EventCancellation,
	upstream.EventCancelOrRefund, upstream.EventRefund, upstream.EventRefundFailed,
	upstream.EventAuthorisationAdjustment, upstream.EventOfferClosed,
}

// TriggerRequest asks for one signed upstream notification.
type TriggerRequest struct {
	// MerchantID owns the payment; "" when the store has one merchant.
	MerchantID string `json:"merchantId,omitempty"`
	EventCode  string `json:"eventCode"`
	// PSPReference is the payment. "": AUTHORISATION and OFFER_CLOSED are
	// sent for a new payment (routed by its metadata, as the platform
	// echoes the service's), every other code for the merchant's latest
	// payment.
	PSPReference string `json:"pspReference,omitempty"`
	// Set edits the item before it is signed: field=value, e.g.
	// success=false, amount.value=500, reason=…, additionalData.key=value.
	Set []string `json:"set,omitempty"`
}

// Triggered is what Trigger sent and what came of it.
type Triggered struct {
	MerchantID          string                           `json:"merchantId"`
	PaymentPSPReference string                           `json:"paymentPspReference"`
	Item                upstream.NotificationRequestItem `json:"item"`
	Status              int                              `json:"status"` // the notifications endpoint's answer
	Answer              string                           `json:"answer"`
	// Operation says which operation of the payment a modification's
	// code was sent for: its latest of the matching kind, or none.
	Operation string `json:"operation,omitempty"`
	// Events are the merchant's events the notification made (none: it
	// could not be routed to the merchant; see notification list
	// --unroutable).
	Events []Event `json:"events"`
	// DuplicateOf is the event an identical notification made before, when
	// this one made none: the service takes a notification once.
	DuplicateOf string `json:"duplicateOf,omitempty"`
	// Targets say what became of the events' webhooks: one per
	// subscription delivery and listener.
	Targets []Target `json:"targets"`
}

// Target is one place a triggered event's webhook went: a subscription
// (its delivery) or a listener (paysvc-admin listen).
type Target struct {
	Kind    string `json:"kind"` // subscription, listener
	ID      string `json:"id"`   // the subscription's, the listener's
	To      string `json:"to"`   // the URL, or how a listener shows it
	EventID string `json:"eventId"`
	Status  string `json:"status"` // delivered, failed, pending
	// Detail says how (the receiver's status), why it failed, or what it
	// waits for.
	Detail string `json:"detail,omitempty"`
}

// String says it in a line: "subscription sub_… (URL): failed: why".
func (t Target) String() string {
	s := fmt.Sprintf("%s %s (%s): %s", t.Kind, t.ID, t.To, t.Status)
	if t.Detail != "" {
		s += ": " + t.Detail
	}
	return s
}

// Target statuses.
const (
	TargetDelivered = "delivered"
	TargetFailed    = "failed"
	TargetPending   = "pending"
)

// targetWait bounds how long Trigger waits for each target's first
// outcome (a listener's report, a delivery's first attempt); what has none
// by then is pending.
const targetWait = 10 * time.Second

// opOfCode is the operation kind (as the timeline names the platform's
// answer to its call: capture, refund, …) a modification's code answers.
var opOfCode = map[string]string{
	upstream.EventCapture: "capture", upstream.EventCaptureFailed: "capture",
	upstream.EventRefund: "refund", upstream.EventRefundFailed: "refund", "REFUNDED_REVERSED": "refund",
	upstream.EventCancelOrRefund: "reversal", upstream.EventAuthorisationAdjustment: "amount-update",
	upstream.EventCancellation: "cancel",
}

// paymentLevel are the codes whose pspReference is the payment's own;
// every other code is a modification with its own pspReference and the
// payment's in originalReference.
var paymentLevel = []string{upstream.EventAuthorisation, upstream.EventOfferClosed}

// Trigger builds a notification item as the simulated platform would,
// applies req.Set, signs it with the upstream HMAC key and posts it to the
// service's notifications endpoint, in process: the service handles it as
// any notification (payment record, events, webhooks, listeners).
func (l *Local) Trigger(ctx context.Context, req TriggerRequest) (Triggered, error) {
	code := strings.ToUpper(strings.TrimSpace(req.EventCode))
	if code == "" || strings.Trim(code, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != "" || len(code) > 64 {
		return Triggered{}, fmt.Errorf("event code %q: upper-case letters, digits and _, e.g. %s", req.EventCode, strings.Join(EventCodes, ", "))
	}
	merchantID, err := l.soleMerchant(ctx, req.MerchantID)
	if err != nil {
		return Triggered{}, err
	}
	m, err := l.Merchant(ctx, merchantID)
	if err != nil {
		return Triggered{}, err
	}
	pay, err := l.triggerPayment(ctx, merchantID, code, strings.TrimSpace(req.PSPReference))
	if err != nil {
		return Triggered{}, err
	}
	operation := ""
	item := upstream.NotificationRequestItem{
		AdditionalData: upstream.AdditionalData{}, Amount: pay.amount, EventCode: code,
		EventDate: l.Clock.Now().UTC().Format(time.RFC3339), MerchantAccountCode: m.UpstreamAccount,
		MerchantReference: pay.reference, PaymentMethod: pay.brand, Success: "true",
	}
	if slices.Contains(paymentLevel, code) {
		item.PSPReference = pay.psp
		// The routing metadata the service sends upstream, echoed.
		item.AdditionalData["metadata.merchantId"] = merchantID
		item.AdditionalData["metadata.siteId"] = pay.siteID
		item.AdditionalData["metadata.paymentSource"] = pay.source
		if code == upstream.EventAuthorisation {
			item.Operations = []string{"CANCEL", "CAPTURE", "REFUND"}
		}
	} else if code == upstream.EventExpire {
		item.PSPReference = pay.psp // as published: the payment's own, no originalReference
	} else {
		item.OriginalReference = pay.psp
		kind := opOfCode[code]
		if op, ok := latestOperation(pay.timeline, kind); ok {
			item.PSPReference = op.psp
			if op.amount.Currency != "" {
				item.Amount = op.amount
			}
			operation = fmt.Sprintf("the payment's latest %s, %s", kind, op.psp)
		} else {
			item.PSPReference = newPSP()
			operation = fmt.Sprintf("no %s of the payment matched: a new pspReference, %s (as one made outside the API)", cmp.Or(kind, "operation"), item.PSPReference)
		}
		if code == upstream.EventCancelOrRefund {
			item.AdditionalData["modification.action"] = "cancel"
		}
	}
	psp := item.PSPReference
	if item, err = applySets(item, req.Set); err != nil {
		return Triggered{}, err
	}
	if operation != "" && item.PSPReference != psp {
		operation = "the pspReference --set gave, " + item.PSPReference
	}
	if !item.Succeeded() {
		item.Operations = nil // a refused authorisation offers none
	}
	signer, err := upstream.NewSigner(l.Secrets.HMACKey)
	if err != nil {
		return Triggered{}, fmt.Errorf("the upstream HMAC key: %w", err)
	}
	item.AdditionalData[upstream.KeyHMACSignature] = signer.SignItem(item)
	body, _ := json.Marshal(upstream.Notification{Live: "false", NotificationItems: []upstream.NotificationItem{{Item: item}}}) // plain structs: cannot fail
	r := httptest.NewRequestWithContext(ctx, http.MethodPost, httpapi.NotificationsPath, bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	if l.Secrets.NotificationUsername != "" || l.Secrets.NotificationPassword != "" {
		r.SetBasicAuth(l.Secrets.NotificationUsername, l.Secrets.NotificationPassword)
	}
	before, err := l.Events(ctx, merchantID, pay.psp, 100)
	if err != nil {
		return Triggered{}, err
	}
	rec := httptest.NewRecorder()
	l.actions().ServeHTTP(rec, r)
	out := Triggered{MerchantID: merchantID, PaymentPSPReference: pay.psp, Item: item, Status: rec.Code, Answer: strings.TrimSpace(rec.Body.String()),
		Operation: operation, Events: []Event{}, Targets: []Target{}}
	if rec.Code != http.StatusOK {
		return out, fmt.Errorf("the notifications endpoint answered %d: %s", rec.Code, out.Answer)
	}
	events, err := l.Events(ctx, merchantID, pay.psp, 100)
	if err != nil {
		return out, err
	}
	for _, e := range events {
		if e.PSPReference != item.PSPReference || e.EventCode != item.EventCode {
			continue
		}
		if slices.ContainsFunc(before, func(b Event) bool { return b.ID == e.ID }) {
			out.DuplicateOf = e.ID // the service takes a notification once
			continue
		}
		out.Events = append(out.Events, e)
	}
	out.Targets, err = l.targets(ctx, merchantID, out.Events)
	return out, err
}

// targets waits, up to targetWait, for the first outcome of every webhook
// of events: each listener's report and each subscription delivery's
// first attempt.
func (l *Local) targets(ctx context.Context, merchantID string, events []Event) ([]Target, error) {
	if len(events) == 0 {
		return []Target{}, nil
	}
	deadline := time.Now().Add(targetWait)
	for {
		out, waiting := []Target{}, false
		var changed <-chan struct{}
		for _, e := range events {
			ts, ch := l.Hub.listenTargets(e.ID)
			changed = ch
			for _, t := range ts {
				t.EventID = e.ID
				waiting = waiting || t.Status == TargetPending
				out = append(out, t)
			}
		}
		ds, err := l.DeliveryStore.ListDeliveries(ctx, merchantID, "", 100)
		if err != nil {
			return out, fmt.Errorf("the deliveries of %s: %w", merchantID, err)
		}
		for _, d := range ds {
			if !slices.ContainsFunc(events, func(e Event) bool { return e.ID == d.EventID }) {
				continue
			}
			t := Target{Kind: "subscription", ID: d.SubscriptionID, EventID: d.EventID, Status: TargetPending}
			if sub, err := l.Tenants.GetSubscription(ctx, merchantID, d.SubscriptionID); err == nil {
				t.To = sub.URL
			}
			t.Status, t.Detail = deliveryOutcome(d)
			waiting = waiting || d.Status == webhooks.StatusPending && d.NextAttemptAt == nil
			out = append(out, t)
		}
		if !waiting || time.Now().After(deadline) {
			return out, nil
		}
		select {
		case <-ctx.Done():
			return out, ctx.Err()
		case <-changed:
		case <-time.After(settlePoll):
		}
	}
}

// deliveryOutcome says what became of a delivery so far.
func deliveryOutcome(d webhooks.Delivery) (status, detail string) {
	last := d.LastError
	if d.LastStatusCode != 0 {
		last = strings.TrimSpace(fmt.Sprintf("%d %s", d.LastStatusCode, last))
	}
	switch {
	case d.Status == webhooks.StatusDelivered:
		return TargetDelivered, fmt.Sprintf("%d, attempt %d", d.LastStatusCode, d.Attempts)
	case d.Status == webhooks.StatusFailed || d.Status == webhooks.StatusDisabled:
		return TargetFailed, fmt.Sprintf("%s after %d attempts (delivery %s)", last, d.Attempts, d.ID)
	case d.NextAttemptAt == nil: // a failed attempt schedules the next
		return TargetPending, fmt.Sprintf("attempt %d is under way (delivery %s)", max(d.Attempts, 1), d.ID)
	}
	return TargetPending, fmt.Sprintf("attempt %d failed: %s, next at %s UTC (delivery %s; retry it now from the dashboard or `delivery retry`)",
		d.Attempts, last, d.NextAttemptAt.UTC().Format(time.TimeOnly), d.ID)
}

// operation is one operation of a payment's timeline.
type operation struct {
	psp    string
	amount money.Amount
}

// latestOperation returns the latest operation of kind made through the
// API that the platform received, by the timeline (the lookup's, decoded
// loosely): its entry of kind KIND, source api, carries the platform's
// pspReference of the operation (KIND-requested carries the service's own
// reference).
func latestOperation(timeline []any, kind string) (operation, bool) {
	var best operation
	var bestAt string
	found := false
	for _, x := range timeline {
		e, _ := x.(map[string]any)
		psp, _ := e["pspReference"].(string)
		at, _ := e["time"].(string)
		if kind == "" || e["kind"] != kind || e["source"] != "api" || psp == "" {
			continue
		}
		if !found || at >= bestAt { // RFC 3339 in UTC: ordered as strings
			best, bestAt, found = operation{psp: psp, amount: amountOf(e["amount"])}, at, true
		}
	}
	return best, found
}

// soleMerchant returns id, or the only merchant when id is "".
func (l *Local) soleMerchant(ctx context.Context, id string) (string, error) {
	if id = strings.TrimSpace(id); id != "" {
		return id, nil
	}
	ms, err := l.Merchants(ctx)
	if err != nil {
		return "", err
	}
	if len(ms) == 1 {
		return ms[0].ID, nil
	}
	ids := make([]string, 0, len(ms))
	for _, m := range ms {
		ids = append(ids, m.ID)
	}
	return "", fmt.Errorf("name the merchant (--merchant): this store has %d (%s)", len(ms), strings.Join(ids, ", "))
}

// triggerPayment is what a triggered notification says of its payment.
type triggerPayment struct {
	psp, siteID, reference, brand, source string
	amount                                money.Amount
	timeline                              []any // the lookup's
}

// triggerPayment finds the payment psp (see TriggerRequest.PSPReference).
func (l *Local) triggerPayment(ctx context.Context, merchantID, code, psp string) (triggerPayment, error) {
	if psp == "" && slices.Contains(paymentLevel, code) {
		sites, err := l.ecommerceSites(ctx, merchantID)
		if err != nil {
			return triggerPayment{}, err
		}
		if len(sites) == 0 {
			return triggerPayment{}, fmt.Errorf("merchant %s has no ecommerce site", merchantID)
		}
		psp := newPSP()
		return triggerPayment{psp: psp, siteID: sites[0].ID, reference: "trigger-" + strings.ToLower(psp), brand: "visa", source: "advanced",
			amount: money.Amount{Value: 1000, Currency: "EUR"}}, nil
	}
	if psp == "" {
		rows, err := l.RecentPayments(ctx, merchantID, 1)
		if err != nil {
			return triggerPayment{}, err
		}
		if len(rows) == 0 {
			return triggerPayment{}, fmt.Errorf("merchant %s has no payment yet for %s: make one, or give its pspReference", merchantID, code)
		}
		psp = rows[0].PSPReference
	}
	p, err := l.Payment(ctx, merchantID, psp)
	if err == nil {
		tp := triggerPayment{psp: psp, siteID: p.SiteID, amount: amountOf(p.View["amount"]), brand: "visa", source: "advanced"}
		tp.timeline, _ = p.View["timeline"].([]any)
		tp.reference, _ = p.View["merchantReference"].(string)
		if pm, ok := p.View["paymentMethod"].(map[string]any); ok && pm["brand"] != nil {
			tp.brand = fmt.Sprint(pm["brand"])
		}
		if s, ok := p.View["paymentSource"].(string); ok && s != "" {
			tp.source = s
		}
		return tp, nil
	}
	if !IsNotFound(err) {
		return triggerPayment{}, err
	}
	if l.Sim != nil {
		if sp, ok := l.Sim.Payment(psp); ok {
			return triggerPayment{psp: psp, siteID: sp.Metadata["siteId"], reference: sp.Reference, amount: sp.Amount,
				brand: sp.PaymentMethod, source: "advanced"}, nil
		}
	}
	return triggerPayment{}, fmt.Errorf("merchant %s has no payment %s", merchantID, psp)
}

// newPSP returns a random 16-character pspReference.
func newPSP() string {
	b := make([]byte, 10)
	_, _ = rand.Read(b)
	return base32.StdEncoding.EncodeToString(b)
}

// applySets edits item with field=value pairs: a dotted path into the
// item's JSON (amount.value), where additionalData.<key> names one key of
// additionalData (keys may hold dots). A value replaces a number as a
// number and anything else as a string (success is the string "true" or
// "false", as the platform sends it). Unknown fields are an error.
func applySets(item upstream.NotificationRequestItem, sets []string) (upstream.NotificationRequestItem, error) {
	if len(sets) == 0 {
		return item, nil
	}
	// A plain struct to JSON and back to a map: neither step can fail.
	raw, _ := json.Marshal(item)
	var doc map[string]any
	_ = json.Unmarshal(raw, &doc)
	for _, set := range sets {
		path, value, ok := strings.Cut(set, "=")
		path = strings.TrimSpace(path)
		if !ok || path == "" {
			return item, fmt.Errorf("--set %q: want field=value, e.g. success=false or amount.value=500", set)
		}
		if key, ok := strings.CutPrefix(path, "additionalData."); ok {
			ad, _ := doc["additionalData"].(map[string]any)
			if ad == nil {
				ad = map[string]any{}
				doc["additionalData"] = ad
			}
			ad[key] = value
			continue
		}
		parts := strings.Split(path, ".")
		obj := doc
		for _, p := range parts[:len(parts)-1] {
			next, ok := obj[p].(map[string]any)
			if !ok {
				return item, fmt.Errorf("--set %q: %s is not an object of the notification item", set, p)
			}
			obj = next
		}
		last := parts[len(parts)-1]
		if _, isNumber := obj[last].(float64); isNumber {
			n, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64)
			if err != nil {
				return item, fmt.Errorf("--set %q: %s is a whole number", set, path)
			}
			obj[last] = n
			continue
		}
		obj[last] = value
	}
	edited, _ := json.Marshal(doc) // decoded JSON and strings and numbers: cannot fail
	var out upstream.NotificationRequestItem
	dec := json.NewDecoder(bytes.NewReader(edited))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		return item, fmt.Errorf("--set: %w (fields: eventCode, success, amount.value, amount.currency, pspReference, originalReference, merchantReference, merchantAccountCode, paymentMethod, reason, eventDate, additionalData.<key>)", err)
	}
	if out.AdditionalData == nil {
		out.AdditionalData = upstream.AdditionalData{}
	}
	return out, nil
}
