package adminapi

import (
	"bytes"
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
	// Events are the merchant's events the notification made (none: it
	// could not be routed to the merchant; see notification list
	// --unroutable).
	Events []Event `json:"events"`
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
		if item.PSPReference, err = newPSP(); err != nil {
			return Triggered{}, err
		}
		item.OriginalReference = pay.psp
		if code == upstream.EventCancelOrRefund {
			item.AdditionalData["modification.action"] = "cancel"
		}
	}
	if item, err = applySets(item, req.Set); err != nil {
		return Triggered{}, err
	}
	if !item.Succeeded() {
		item.Operations = nil // a refused authorisation offers none
	}
	signer, err := upstream.NewSigner(l.Secrets.HMACKey)
	if err != nil {
		return Triggered{}, fmt.Errorf("the upstream HMAC key: %w", err)
	}
	item.AdditionalData[upstream.KeyHMACSignature] = signer.SignItem(item)
	body, err := json.Marshal(upstream.Notification{Live: "false", NotificationItems: []upstream.NotificationItem{{Item: item}}})
	if err != nil {
		return Triggered{}, err
	}
	r := httptest.NewRequestWithContext(ctx, http.MethodPost, httpapi.NotificationsPath, bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	if l.Secrets.NotificationUsername != "" || l.Secrets.NotificationPassword != "" {
		r.SetBasicAuth(l.Secrets.NotificationUsername, l.Secrets.NotificationPassword)
	}
	rec := httptest.NewRecorder()
	l.Handler.ServeHTTP(rec, r)
	out := Triggered{MerchantID: merchantID, PaymentPSPReference: pay.psp, Item: item, Status: rec.Code, Answer: strings.TrimSpace(rec.Body.String()), Events: []Event{}}
	if rec.Code != http.StatusOK {
		return out, fmt.Errorf("the notifications endpoint answered %d: %s", rec.Code, out.Answer)
	}
	events, err := l.Events(ctx, merchantID, pay.psp, 100)
	if err != nil {
		return out, err
	}
	for _, e := range events {
		if e.PSPReference == item.PSPReference && e.EventCode == code {
			out.Events = append(out.Events, e)
		}
	}
	return out, nil
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
		psp, err := newPSP()
		if err != nil {
			return triggerPayment{}, err
		}
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
func newPSP() (string, error) {
	b := make([]byte, 10)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random pspReference: %w", err)
	}
	return base32.StdEncoding.EncodeToString(b), nil
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
	raw, err := json.Marshal(item)
	if err != nil {
		return item, err
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return item, err
	}
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
	edited, err := json.Marshal(doc)
	if err != nil {
		return item, err
	}
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
