package notifications

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/yp/paysvc/shared/apperr"
	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/queue"
	"github.com/yp/paysvc/shared/storeerr"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/webhooks"
)

// maxItems bounds the items of one notification (the upstream sends one).
const maxItems = 100

// Receiver processes the upstream's notifications, on every store the
// same way. Every field but Live and Metrics is required. It is
// safe for concurrent use.
type Receiver struct {
	Events     EventStore
	Payments   payments.Store
	Tenants    tenant.Store
	Deliveries webhooks.DeliveryStore
	Queue      queue.Queue
	Clock      clock.Clock
	Log        *slog.Logger
	// Live is the deployment's environment: webhooks carry "live": true
	// only in production (docs/security.md), and only notifications whose
	// live flag says the same are applied.
	Live bool
	// Metrics counts unroutable notifications and those of the other
	// environment (nil: not counted).
	Metrics Metrics
	// Sleeper waits before an item is processed again after its payment
	// changed meanwhile (nil: real time).
	Sleeper payments.Sleeper
}

// Metrics counts what the receiver sees (EMF in Lambda).
type Metrics interface {
	// NotificationUnroutable counts an item kept unroutable, and why.
	NotificationUnroutable(reason string)
	// NotificationLiveMismatch counts an item whose live flag is not the
	// service's environment (kept, never applied).
	NotificationLiveMismatch()
	// NotificationAccountLevel counts an account-level item (about no
	// payment: kept for operations, never routed).
	NotificationAccountLevel(code string)
}

// liveMismatch says why a notification's live flag as sent is not this
// service's environment ("true" in the live one, "false" in the test
// one), or "".
func (r *Receiver) liveMismatch(live string) string {
	if live == strconv.FormatBool(r.Live) {
		return ""
	}
	env := tenant.EnvTest
	if r.Live {
		env = tenant.EnvLive
	}
	return fmt.Sprintf("live flag %q in the %s environment", live, env)
}

// Accept processes the items of one notification, whose signatures the
// upstream adapter verified (live: the notification's live field as
// sent). It returns nil only when every item is stored, applied to its
// payment and has its deliveries enqueued (or is kept as unroutable) — the
// upstream is then answered "[accepted]"; any other error means the
// upstream must retry (it is answered 500).
func (r *Receiver) Accept(ctx context.Context, live string, items []payments.Notification) error {
	if len(items) == 0 {
		return apperr.New(apperr.Invalid, "notification without notificationItems")
	}
	if len(items) > maxItems {
		return apperr.Newf(apperr.Invalid, "notification with more than %d items", maxItems)
	}
	for _, it := range items {
		if it.EventCode == "" || it.PSPReference == "" {
			return apperr.New(apperr.Invalid, "notification item without eventCode or pspReference")
		}
	}
	for _, it := range items {
		err := r.acceptItem(ctx, live, it)
		switch {
		case err == nil:
		default:
			return apperr.Wrap(apperr.Internal, "internal error", err)
		}
	}
	return nil
}

// acceptItem stores one arrival of item and processes it unless an
// earlier arrival did. The item's event, its payment record and the
// merchant its routing metadata names are read at once; a concurrent
// change of the event or the record (the commit's conditions) redoes the
// item.
//
// Under contention on the payment (concurrent operations and
// notifications each move its head) an item waits a jittered pause
// before each retry, as an operation's request does
// (payments.WaitToRetry), and is retried as often: retrying at once
// loses again and again, and the upstream would be answered 500.
func (r *Receiver) acceptItem(ctx context.Context, live string, item payments.Notification) error {
	fresh := newEvent(live, item, r.Clock.Now())
	for attempt := 1; attempt <= maxItemAttempts; attempt++ {
		if attempt > 1 {
			if err := payments.WaitToRetry(ctx, r.Sleeper, attempt-1); err != nil {
				return fmt.Errorf("store event %s: %w", fresh.ID, err)
			}
		}
		var stored Event
		var storedErr error
		psp := fresh.PaymentPSP
		if payments.CodeOf(item.EventCode).AccountLevel() {
			psp = "" // about no payment: none is read
		}
		in := r.read(ctx, psp, item.EntryRef(), item.AdditionalData[keyMetaMerchant],
			func() { stored, storedErr = r.Events.GetEvent(ctx, fresh.ID) })
		ev, prev := fresh, int64(0)
		switch {
		case storedErr == nil && r.liveMismatch(live) != "":
			// Another environment's copy of a stored item changes nothing.
			r.liveRefused(ctx, fresh, r.liveMismatch(live))
			return nil
		case storedErr == nil:
			ev, prev = stored, stored.Version
			ev.Live = live
			ev.Received++
			ev.UpdatedAt = r.Clock.Now()
		case !errors.Is(storedErr, storeerr.ErrNotFound):
			return fmt.Errorf("read event %s: %w", fresh.ID, storedErr)
		}
		if prev != 0 && stored.DeliveriesEnqueued() {
			ev.Version = prev + 1
			err := r.Events.SaveEvent(ctx, ev, prev)
			if errors.Is(err, storeerr.ErrConflict) {
				continue
			}
			if err != nil {
				return fmt.Errorf("store event %s again: %w", ev.ID, err)
			}
			r.Log.InfoContext(ctx, "duplicate notification: already processed",
				"eventId", ev.ID, "eventCode", item.EventCode, "pspReference", item.PSPReference, "received", ev.Received)
			return nil
		}
		err := r.process(ctx, ev, prev, in, processOpts{})
		if !errors.Is(err, storeerr.ErrConflict) {
			return err
		}
	}
	return fmt.Errorf("store event %s: too many concurrent updates: %w", fresh.ID, storeerr.ErrConflict)
}

// liveRefused logs and counts an arrival of ev whose live flag is not this
// service's environment.
func (r *Receiver) liveRefused(ctx context.Context, ev Event, why string) {
	r.Log.WarnContext(ctx, "notification not applied: its live flag is not this service's environment; kept unroutable",
		"eventId", ev.ID, "eventCode", ev.Item.EventCode, "pspReference", ev.PaymentPSP, "live", ev.Live, "reason", why)
	if r.Metrics != nil {
		r.Metrics.NotificationLiveMismatch()
	}
}

// maxItemAttempts bounds the processings of one arrival of an item that
// lost to concurrent changes (the bound of an operation's request).
const maxItemAttempts = 50

// The one pipeline of a notification item, on every store. After one
// round of concurrent reads (the event, its payment record, the merchant
// and its subscriptions):
//
//  1. route the event to its merchant (routing.go), or keep it unroutable;
//  2. apply it to the payment record (payments.ApplyNotification: the
//     record to save, not saved);
//  3. CommitItem: the event (received, its deliveries listed), the
//     record, the deliveries and the merchant's history entry, written
//     together;
//  4. enqueue each delivery's first attempt (and, for an AUTHORISATION,
//     process the payment's unroutable events again);
//  5. mark the event processed.
//
// Every step is idempotent and the event turns processed only at the end,
// so an item whose processing stopped part way (a crash, a failed store or
// queue call: the upstream is answered 500 and sends it again) is
// completed by the next arrival.

// processOpts tune one processing of an event.
type processOpts struct {
	// replay: an unroutable event processed again because its payment's
	// record appeared (or an operator routes it); the upstream will not
	// retry it.
	replay bool
	// to: the owner an operator gives the event (Route); nil: route it.
	to *RouteTo
}

// reads is what processing an event reads first, concurrently.
type reads struct {
	pay    payments.Head
	payErr error
	entry  *payments.Entry // the entry the item is a fact of (nil: none stored)
	entErr error
	tenant *tenantRead // the merchant the routing metadata names (nil: none read)
}

// tenantRead is a merchant and its subscriptions, read together.
type tenantRead struct {
	merchantID string
	merchant   tenant.Merchant
	merchErr   error
	subs       []tenant.Subscription
	subsErr    error
}

// read reads payment psp ("": none, as if not found) and, when merchantID
// is set, that merchant with its subscriptions, concurrently with more.
func (r *Receiver) read(ctx context.Context, psp, ref, merchantID string, more ...func()) *reads {
	in := &reads{payErr: storeerr.ErrNotFound}
	fns := more
	if psp != "" {
		fns = append(fns, func() { in.pay, in.payErr = r.Payments.GetPayment(ctx, psp) })
	}
	if ref != "" && psp != "" {
		fns = append(fns, func() {
			var es []payments.Entry
			if es, in.entErr = r.Payments.GetEntries(ctx, psp, ref); len(es) == 1 {
				in.entry = &es[0]
			}
		})
	}
	if merchantID != "" {
		fns = append(fns, func() { in.tenant = r.readTenant(ctx, merchantID) })
	}
	if len(fns) > 0 {
		parallel(fns...)
	}
	return in
}

func (r *Receiver) readTenant(ctx context.Context, merchantID string) *tenantRead {
	t := &tenantRead{merchantID: merchantID}
	parallel(
		func() { t.merchant, t.merchErr = r.Tenants.GetMerchant(ctx, merchantID) },
		func() { t.subs, t.subsErr = r.Tenants.ListSubscriptions(ctx, merchantID) },
	)
	return t
}

// merchant returns merchant id with its subscriptions: read already, or now.
func (in *reads) merchant(ctx context.Context, r *Receiver, id string) *tenantRead {
	if in.tenant == nil || in.tenant.merchantID != id {
		in.tenant = r.readTenant(ctx, id)
	}
	return in.tenant
}

// parallel runs fns concurrently and waits for all of them.
func parallel(fns ...func()) {
	var wg sync.WaitGroup
	for _, fn := range fns[1:] {
		wg.Go(fn)
	}
	fns[0]()
	wg.Wait()
}

// process runs the pipeline for ev, stored at version prev (0: new),
// given its first reads. storeerr.ErrConflict: the event or the record
// changed meanwhile; read and process again.
func (r *Receiver) process(ctx context.Context, ev Event, prev int64, in *reads, opts processOpts) error {
	now := r.Clock.Now()
	item := ev.Item
	log := r.Log.With("eventId", ev.ID, "eventCode", item.EventCode, "pspReference", ev.PaymentPSP)
	getMerchant := func(ctx context.Context, id string) (tenant.Merchant, error) {
		t := in.merchant(ctx, r, id)
		return t.merchant, t.merchErr
	}
	// A notification of the other environment is kept, never routed:
	// neither a replay nor an operator's route applies it.
	var o owner
	var err error
	mismatch := r.liveMismatch(ev.Live)
	unroutable := mismatch
	code := payments.CodeOf(item.EventCode)
	if mismatch == "" && code.AccountLevel() {
		return r.keepAccount(ctx, ev, prev, log)
	}
	if mismatch == "" {
		o, unroutable, err = r.routeWith(ctx, ev, in.pay, in.payErr, getMerchant)
	}
	if mismatch == "" && err == nil && unroutable != "" && code.Unreferenced() && errors.Is(in.payErr, storeerr.ErrNotFound) {
		return r.keepAccount(ctx, ev, prev, log) // e.g. a refund made outside the service, of no payment of its
	}
	if opts.to != nil && err == nil && unroutable != "" && mismatch == "" {
		o, unroutable, err = r.routeTo(ctx, ev, *opts.to)
	}
	if err != nil {
		return err
	}
	save := func(what string) error {
		ev.Version = prev + 1
		if err := r.Events.SaveEvent(ctx, ev, prev); err != nil {
			return fmt.Errorf("%s event %s: %w", what, ev.ID, err)
		}
		return nil
	}
	if unroutable != "" {
		if opts.replay && ev.Status == EventUnroutable && ev.UnroutableReason == unroutable {
			return nil // nothing new
		}
		ev.Status, ev.UnroutableReason, ev.UpdatedAt = EventUnroutable, unroutable, now
		if ev.UnroutableAt == nil {
			ev.UnroutableAt = &now
		}
		if err := save("mark unroutable"); err != nil {
			return err
		}
		if mismatch != "" {
			r.liveRefused(ctx, ev, mismatch)
			return nil
		}
		log.WarnContext(ctx, "notification kept unroutable: no owning merchant found", "reason", unroutable,
			"merchantAccountCode", item.MerchantAccountCode)
		if r.Metrics != nil {
			r.Metrics.NotificationUnroutable(unroutable)
		}
		return nil
	}
	log = log.With("merchant", o.merchant.ID)

	popts := payments.NotificationOptions{Now: now, CaptureMode: o.merchant.CaptureMode, MultipleCaptures: o.merchant.MultiplePartialCaptures}
	if o.via != viaPayment {
		popts.Owner = &payments.NotificationOwner{MerchantID: o.merchant.ID, SiteID: o.siteID, Source: o.source, SessionID: o.sessionID}
	}
	var record *payments.Head
	if in.payErr == nil {
		record = &in.pay
	}
	if in.entErr != nil {
		return fmt.Errorf("read payment %s: %w", ev.PaymentPSP, in.entErr)
	}
	res, err := payments.Notify(ctx, r.Payments, record, in.entry, item, popts)
	switch {
	case errors.Is(err, payments.ErrUnknownPayment):
		log.InfoContext(ctx, "notification for a payment without record: delivered, no record updated")
	case err != nil:
		return err
	case res.Created:
		log.InfoContext(ctx, "payment record created from its notification", "state", string(res.Head.View().State))
	}
	source := o.source
	if res.Head.Source != "" {
		source = res.Head.Source
	}
	payload, err := webhooks.BuildPayload(r.Live, item, string(source), res.Seq)
	if err != nil {
		return err
	}
	t := in.merchant(ctx, r, o.merchant.ID)
	if t.subsErr != nil {
		return fmt.Errorf("list subscriptions of %s: %w", o.merchant.ID, t.subsErr)
	}

	listed := ev.DeliveryIDs // by an earlier processing that stopped part way
	c := ItemCommit{PrevEventVersion: prev, MerchantEvent: &MerchantEvent{
		ID: ev.ID, MerchantID: o.merchant.ID, EventCode: item.EventCode, PSPReference: item.PSPReference,
		PaymentPSP: ev.PaymentPSP, Payload: payload, CreatedAt: ev.ReceivedAt,
	}}
	for _, sub := range t.subs {
		if !sub.Enabled || !wants(sub, item.EventCode) {
			continue
		}
		d := webhooks.Delivery{
			ID: webhooks.DeliveryID(ev.ID, sub.ID), MerchantID: o.merchant.ID, SubscriptionID: sub.ID,
			EventID: ev.ID, EventCode: item.EventCode, PSPReference: ev.PaymentPSP, Payload: payload,
			Status: webhooks.StatusPending, Enqueued: true, CreatedAt: now, UpdatedAt: now, Version: 1,
		}
		c.Deliveries = append(c.Deliveries, d)
		if !slices.Contains(ev.DeliveryIDs, d.ID) {
			ev.DeliveryIDs = append(slices.Clip(ev.DeliveryIDs), d.ID)
		}
	}
	c.Payment = res.Write
	ev.Status, ev.MerchantID, ev.UpdatedAt, ev.Version = EventReceived, o.merchant.ID, now, prev+1
	c.Event = ev
	if err := r.Events.CommitItem(ctx, c); err != nil {
		return fmt.Errorf("commit event %s: %w", ev.ID, err)
	}
	res.Saved(ctx, r.Payments)

	var enqErr, replayErr error
	steps := []func(){func() { enqErr = r.enqueue(ctx, c.Deliveries, listed) }}
	if item.Authorisation() && (!opts.replay || opts.to != nil) {
		steps = append(steps, func() { replayErr = r.replayUnroutable(ctx, ev) })
	}
	parallel(steps...)
	if err := errors.Join(enqErr, replayErr); err != nil {
		return err
	}
	if err := r.markProcessed(ctx, ev); err != nil {
		return err
	}
	log.InfoContext(ctx, "notification processed", "deliveries", len(c.Deliveries), "routedBy", o.via)
	return nil
}

// keepAccount keeps ev, an account-level item (or one naming no payment of
// the service that is account-level then: REFUND_WITH_DATA), for
// operations: final, never routed, applied or forwarded; logged INFO and
// counted apart from the unroutable ones, which page.
func (r *Receiver) keepAccount(ctx context.Context, ev Event, prev int64, log *slog.Logger) error {
	now := r.Clock.Now()
	ev.Status, ev.ProcessedAt, ev.UpdatedAt, ev.Version = EventAccount, &now, now, prev+1
	if err := r.Events.SaveEvent(ctx, ev, prev); err != nil {
		return fmt.Errorf("keep account-level event %s: %w", ev.ID, err)
	}
	log.InfoContext(ctx, "account-level notification kept: about no payment of this service",
		"merchantAccountCode", ev.Item.MerchantAccountCode, "itemPspReference", ev.Item.PSPReference)
	if r.Metrics != nil {
		r.Metrics.NotificationAccountLevel(ev.Item.EventCode)
	}
	return nil
}

// enqueue sends the first attempt's job of each of ds, concurrently,
// except those listed by an earlier processing of the event that are no
// longer pending or were attempted already (their jobs were sent then).
func (r *Receiver) enqueue(ctx context.Context, ds []webhooks.Delivery, listed []string) error {
	errs := make([]error, len(ds))
	fns := make([]func(), 0, len(ds)+1)
	fns = append(fns, func() {}) // parallel needs one
	for i, d := range ds {
		fns = append(fns, func() {
			if slices.Contains(listed, d.ID) {
				cur, err := r.Deliveries.GetDelivery(ctx, d.ID)
				if err != nil && !errors.Is(err, storeerr.ErrNotFound) {
					errs[i] = fmt.Errorf("read delivery %s: %w", d.ID, err)
					return
				}
				if err == nil && (cur.Status != webhooks.StatusPending || cur.Attempts > 0) {
					return
				}
			}
			job := queue.Job{DeliveryID: d.ID, Attempt: 1, MerchantID: d.MerchantID, SubscriptionID: d.SubscriptionID}
			if err := r.Queue.Enqueue(ctx, job, 0); err != nil {
				errs[i] = fmt.Errorf("enqueue delivery %s: %w", d.ID, err)
			}
		})
	}
	parallel(fns...)
	return errors.Join(errs...)
}

// wants reports whether sub subscribes to code (no filter: every code).
func wants(sub tenant.Subscription, code string) bool {
	if len(sub.EventCodes) == 0 {
		return true
	}
	return slices.ContainsFunc(sub.EventCodes, func(c string) bool { return strings.EqualFold(c, code) })
}

// replayUnroutable processes the unroutable events of ev's payment again,
// now that its AUTHORISATION has been applied (a modification that
// overtook the authorisation of a Sessions-flow payment).
func (r *Receiver) replayUnroutable(ctx context.Context, ev Event) error {
	events, err := r.Events.ListPaymentEvents(ctx, ev.PaymentPSP)
	if err != nil {
		return fmt.Errorf("list events of payment %s: %w", ev.PaymentPSP, err)
	}
	for _, e := range events {
		if e.ID == ev.ID || e.Status != EventUnroutable {
			continue
		}
		r.Log.InfoContext(ctx, "processing an unroutable notification again: its payment is now known",
			"eventId", e.ID, "eventCode", e.Item.EventCode, "pspReference", e.PaymentPSP)
		if err := r.processStored(ctx, e.ID, processOpts{replay: true}); err != nil {
			return fmt.Errorf("replay event %s: %w", e.ID, err)
		}
	}
	return nil
}

// processStored processes stored event id again (replays, an operator's
// routing), reading it afresh after a concurrent change.
func (r *Receiver) processStored(ctx context.Context, id string, opts processOpts) error {
	for range maxMutateAttempts {
		ev, err := r.Events.GetEvent(ctx, id)
		if err != nil {
			return fmt.Errorf("event %s: %w", id, err)
		}
		if ev.Status != EventUnroutable {
			return nil // processed meanwhile
		}
		err = r.process(ctx, ev, ev.Version, r.read(ctx, ev.PaymentPSP, ev.Item.EntryRef(), ""), opts)
		if !errors.Is(err, storeerr.ErrConflict) {
			return err
		}
	}
	return fmt.Errorf("event %s: too many concurrent updates: %w", id, storeerr.ErrConflict)
}

// markProcessed records that the deliveries of ev (as committed) are all
// enqueued: from the version committed, else (a concurrent arrival
// counted itself meanwhile) from the version stored.
func (r *Receiver) markProcessed(ctx context.Context, ev Event) error {
	now := r.Clock.Now()
	prev := ev.Version
	ev.Status, ev.ProcessedAt, ev.UpdatedAt, ev.Version = EventProcessed, &now, now, prev+1
	err := r.Events.SaveEvent(ctx, ev, prev)
	if !errors.Is(err, storeerr.ErrConflict) {
		if err != nil {
			return fmt.Errorf("mark event %s processed: %w", ev.ID, err)
		}
		return nil
	}
	_, err = mutateEvent(ctx, r.Events, ev.ID, func(e *Event) error {
		if e.Status == EventProcessed {
			return errSkip
		}
		e.Status, e.ProcessedAt, e.UpdatedAt = EventProcessed, &now, now
		return nil
	})
	if err != nil {
		return fmt.Errorf("mark event %s processed: %w", ev.ID, err)
	}
	return nil
}

// Routing metadata keys as the upstream echoes them in additionalData.
const (
	keyMetaMerchant = payments.MetadataPrefix + payments.MetaMerchant
	keyMetaSite     = payments.MetadataPrefix + payments.MetaSite
	keyMetaSource   = payments.MetadataPrefix + payments.MetaSource
)

// Ways an owner is found.
const (
	viaPayment  = "payment"
	viaMetadata = "metadata"
	viaSession  = "session"
	viaOperator = "operator" // paysvc-admin notification route --merchant
)

// owner is the merchant (and site) a notification belongs to.
type owner struct {
	merchant  tenant.Merchant
	siteID    string
	source    payments.Source
	sessionID string
	via       string
}

// routeWith finds the merchant owning ev's payment: the payment record
// when there is one (the service's own data; additionalData is not
// covered by the HMAC), else the routing metadata the service sent
// upstream, else the session record. p, err are the read of ev's payment
// record, getMerchant how to read a merchant. The merchant must exist and,
// when both are known, its upstream account must be the item's
// merchantAccountCode (which the HMAC covers). unroutable explains why no
// owner was found.
func (r *Receiver) routeWith(ctx context.Context, ev Event, p payments.Head, err error,
	getMerchant func(context.Context, string) (tenant.Merchant, error)) (o owner, unroutable string, _ error) {
	ad := ev.Item.AdditionalData
	sessionID := ad[payments.KeyCheckoutSessionID]
	var merchantID string
	switch {
	case err == nil:
		merchantID = p.MerchantID
		o = owner{siteID: p.SiteID, source: p.Source, sessionID: p.SessionID, via: viaPayment}
		if m := ad[keyMetaMerchant]; m != "" && m != p.MerchantID {
			r.Log.WarnContext(ctx, "notification metadata names another merchant than the payment record; the record wins",
				"eventId", ev.ID, "pspReference", ev.PaymentPSP, "merchant", p.MerchantID, "metadataMerchant", m)
		}
	case !errors.Is(err, storeerr.ErrNotFound):
		return owner{}, "", fmt.Errorf("read payment %s: %w", ev.PaymentPSP, err)
	case ad[keyMetaMerchant] != "":
		merchantID = ad[keyMetaMerchant]
		o = owner{siteID: ad[keyMetaSite], source: sourceOf(ad[keyMetaSource]), sessionID: sessionID, via: viaMetadata}
	case sessionID != "":
		s, err := r.Payments.GetSession(ctx, sessionID)
		if err != nil && !errors.Is(err, storeerr.ErrNotFound) {
			return owner{}, "", fmt.Errorf("read session %s: %w", sessionID, err)
		}
		if err == nil {
			merchantID = s.MerchantID
			o = owner{siteID: s.SiteID, source: payments.SourceSessions, sessionID: sessionID, via: viaSession}
		}
	}
	if merchantID == "" {
		return owner{}, "no payment record, routing metadata or session names the merchant", nil
	}
	m, err := getMerchant(ctx, merchantID)
	if errors.Is(err, storeerr.ErrNotFound) {
		return owner{}, "unknown merchant " + merchantID, nil
	}
	if err != nil {
		return owner{}, "", fmt.Errorf("read merchant %s: %w", merchantID, err)
	}
	if acct := ev.Item.MerchantAccountCode; m.UpstreamAccount != "" && acct != "" && acct != m.UpstreamAccount {
		return owner{}, "merchantAccountCode " + acct + " is not the upstream account of merchant " + m.ID, nil
	}
	o.merchant = m
	if o.source == "" {
		o.source = payments.SourceAdvanced
		if sessionID != "" {
			o.source = payments.SourceSessions
		}
	}
	return o, "", nil
}

// sourceOf parses a paymentSource metadata value ("" when unknown).
func sourceOf(v string) payments.Source {
	switch s := payments.Source(v); s {
	case payments.SourceSessions, payments.SourceAdvanced:
		return s
	}
	return ""
}
