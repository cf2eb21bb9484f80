package dynamo_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/store"
	"github.com/yp/paysvc/shared/store/dynamo"
	"github.com/yp/paysvc/shared/storeerr"
)

// A payment stored before ledgers is one document: the tests write it
// as the adapter did then (git history: shared/store/dynamo/payments.go,
// items.go, records/payments.go), in these types, whose JSON is that
// record's.

type oldAmount struct {
	Value    int64  `json:"value"`
	Currency string `json:"currency"`
}

type oldPayment struct {
	PSPReference       string           `json:"pspReference"`
	MerchantID         string           `json:"merchantId"`
	SiteID             string           `json:"siteId"`
	Reference          string           `json:"reference,omitempty"`
	Source             string           `json:"source"`
	SessionID          string           `json:"sessionId,omitempty"`
	Amount             oldAmount        `json:"amount"`
	AuthorisedValue    int64            `json:"authorisedValue"`
	CapturedValue      int64            `json:"capturedValue"`
	RefundedValue      int64            `json:"refundedValue"`
	State              string           `json:"state"`
	ResultCode         string           `json:"resultCode,omitempty"`
	RefusalReason      string           `json:"refusalReason,omitempty"`
	PaymentMethod      string           `json:"paymentMethod,omitempty"`
	ShopperReference   string           `json:"shopperReference,omitempty"`
	StoredMethodID     string           `json:"storedPaymentMethodId,omitempty"`
	StorePayment       bool             `json:"storePaymentMethod,omitempty"`
	AuthType           string           `json:"authorisationType,omitempty"`
	BoundTo            string           `json:"boundTo,omitempty"`
	Reservations       map[string]int64 `json:"reservations,omitempty"`
	RefundReservations map[string]int64 `json:"refundReservations,omitempty"`
	History            []oldEvent       `json:"history"`
	Version            int64            `json:"version"`
	CreatedAt          time.Time        `json:"createdAt"`
	UpdatedAt          time.Time        `json:"updatedAt"`
}

type oldEvent struct {
	At           time.Time  `json:"at"`
	Kind         string     `json:"kind"`
	Origin       string     `json:"origin"`
	PSPReference string     `json:"pspReference,omitempty"`
	Amount       *oldAmount `json:"amount,omitempty"`
	Success      *bool      `json:"success,omitempty"`
	Detail       string     `json:"detail,omitempty"`
}

// putLegacy stores p as SavePayment did: META, the record without its
// history (hn: its length; version; the save's token wt; ttl), and one
// H#<index, 10 digits> item per history entry, each with the record's ttl.
// inline: as it did before history items, the history in META's data (no
// hn, no history items).
func putLegacy(t *testing.T, client *dynamodb.Client, table string, p oldPayment, inline bool) {
	t.Helper()
	pk := &types.AttributeValueMemberS{Value: "PAYMENT#" + p.PSPReference}
	ttl := &types.AttributeValueMemberN{Value: strconv.FormatInt(p.CreatedAt.Add(store.PaymentRetention).Unix(), 10)}
	meta := p
	if !inline {
		meta.History = nil
	}
	raw, err := json.Marshal(meta)
	if err != nil {
		t.Fatal(err)
	}
	it := dynamo.Item{"pk": pk, "sk": &types.AttributeValueMemberS{Value: "META"}, "data": &types.AttributeValueMemberS{Value: string(raw)},
		"version": &types.AttributeValueMemberN{Value: strconv.FormatInt(p.Version, 10)}}
	if !inline {
		it["hn"] = &types.AttributeValueMemberN{Value: strconv.Itoa(len(p.History))}
		it["wt"], it["ttl"] = &types.AttributeValueMemberS{Value: "0123456789abcdef01234567"}, ttl
	}
	rawPut(t, client, table, it)
	if inline {
		return
	}
	for i, ev := range p.History {
		raw, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		rawPut(t, client, table, dynamo.Item{"pk": pk, "sk": &types.AttributeValueMemberS{Value: fmt.Sprintf("H#%010d", i)},
			"data": &types.AttributeValueMemberS{Value: string(raw)}, "ttl": ttl})
	}
}

var tLegacy = time.Date(2026, 1, 12, 8, 30, 0, 250000000, time.UTC)

// legacyPayment is a payment authorised for 1000 EUR, 600 captured
// (requested, answered, notified), 200 more being captured (sent, not
// answered: a reservation) and 100 refunded (accepted, not notified yet).
func legacyPayment(psp string) oldPayment {
	yes := true
	eur := func(v int64) *oldAmount { return &oldAmount{Value: v, Currency: "EUR"} }
	at := func(s int) time.Time { return tLegacy.Add(time.Duration(s) * time.Second) }
	return oldPayment{
		PSPReference: psp, MerchantID: "m_a", SiteID: "site_1", Reference: "order-legacy", Source: "advanced",
		Amount: oldAmount{Value: 1000, Currency: "EUR"}, AuthorisedValue: 1000, CapturedValue: 600, State: "PartiallyCaptured",
		ResultCode: "Authorised", PaymentMethod: "visa", ShopperReference: "shopper-1",
		Reservations: map[string]int64{"op_x": 200}, RefundReservations: map[string]int64{"REF1": 100},
		History: []oldEvent{
			{At: at(0), Kind: "payment", Origin: "api", PSPReference: psp, Amount: eur(1000), Detail: "Authorised"},
			{At: at(1), Kind: "AUTHORISATION", Origin: "notification", PSPReference: psp, Amount: eur(1000), Success: &yes},
			{At: at(2), Kind: "capture", Origin: "api", PSPReference: "CAP1", Amount: eur(600), Detail: "received"},
			{At: at(3), Kind: "CAPTURE", Origin: "notification", PSPReference: "CAP1", Amount: eur(600), Success: &yes},
			{At: at(4), Kind: "refund", Origin: "api", PSPReference: "REF1", Amount: eur(100), Detail: "received"},
		},
		Version: 7, CreatedAt: at(0), UpdatedAt: at(5),
	}
}

// TestLegacyPaymentConvertedAndMoved: a payment stored before ledgers (as
// SavePayment wrote it: META and its history items) reads converted —
// its head with the Totals its history and reservations fold to, an entry
// per operation, a fact per history line, paged — without anything
// written; its first write moves it to the ledger (HEAD, E#, F# items with
// the payment's ttl; META and its history items gone) and is then made,
// the money guard on the converted Totals; it reads the same after, and
// the fold holds.
func TestLegacyPaymentConvertedAndMoved(t *testing.T) {
	ctx := context.Background()
	client, table := newTable(t)
	clk := clock.NewFake(tLegacy.Add(time.Hour))
	s := dynamo.New(client, table, clk)
	const psp = "PSP_LEGACY"
	old := legacyPayment(psp)
	putLegacy(t, client, table, old, false)
	refs := []string{"CAP1", "REF1", "op_x", "op_new", "op_none"}

	h, es := ledger(t, s, psp, refs...)
	want := payments.Totals{Captured: 600, CapturesInFlight: 200, RefundsInFlight: 100, Capturable: 200, Refundable: 500}
	if h.Totals != want || h.Version != 7 || h.Authorised != 1000 || h.AuthStatus() != payments.StateAuthorised ||
		h.Amount != (money.Amount{Value: 1000, Currency: "EUR"}) || h.MerchantID != "m_a" || h.SiteID != "site_1" ||
		h.Reference != "order-legacy" || !h.CreatedAt.Equal(tLegacy) {
		t.Fatalf("converted head %+v; want Totals %+v, version 7", h, want)
	}
	if v := h.View(); v.State != payments.StatePartiallyCaptured || v.Capturable != 200 || v.Refundable != 500 {
		t.Fatalf("converted view %+v", v)
	}
	e := byRef(es)
	if len(es) != 3 {
		t.Fatalf("converted entries %+v; want CAP1, REF1, op_x", es)
	}
	if c := e["CAP1"]; c.Kind != payments.OpCapture || c.Requested == nil || c.Requested.Amount.Value != 600 ||
		c.Answered == nil || c.Answered.Outcome != payments.Received || len(c.Notices) != 1 || c.Notices[0].Code != payments.EventCapture {
		t.Fatalf("CAP1 %+v", c)
	}
	if r := e["REF1"]; r.Kind != payments.OpRefund || r.Requested == nil || r.Requested.Amount.Value != 100 || len(r.Notices) != 0 {
		t.Fatalf("REF1 %+v", r)
	}
	if x := e["op_x"]; x.Kind != payments.OpCapture || x.Requested == nil || x.Requested.Amount.Value != 200 || x.Answered != nil {
		t.Fatalf("op_x %+v", x)
	}
	facts := timeline(t, s, psp, 2)
	if len(facts) != 5 {
		t.Fatalf("converted timeline: %d facts, want 5", len(facts))
	}
	for i, f := range facts {
		if ev := old.History[i]; f.Kind != ev.Kind || f.Origin != ev.Origin || !f.At.Equal(ev.At) || f.At.Location() != time.UTC ||
			f.PSPReference != ev.PSPReference {
			t.Fatalf("fact %d %+v, from %+v", i, f, ev)
		}
	}
	if all := items(t, client, table, "PAYMENT#"+psp); len(all) != 6 || all["META"] == nil {
		t.Fatalf("reading wrote: items %s, want META and 5 history items", keys(all))
	}

	// The first write: a capture of 300 is more than the converted
	// Totals leave (200); one of 150 is not.
	clk.Advance(time.Minute)
	if err := s.Write(ctx, request(psp, capture("op_big", 300, clk.Now()))); !errors.Is(err, storeerr.ErrConflict) {
		t.Fatalf("a capture over what the legacy payment leaves: %v, want a conflict", err)
	}
	write(t, s, request(psp, capture("op_new", 150, clk.Now())))

	all := items(t, client, table, "PAYMENT#"+psp)
	var sks []string
	for sk := range all {
		sks = append(sks, sk)
	}
	sort.Strings(sks)
	wantKeys := []string{"E#CAP1", "E#REF1", "E#op_new", "E#op_x"}
	for _, f := range facts {
		wantKeys = append(wantKeys, factKey(t, f))
	}
	wantKeys = append(wantKeys, "F#"+clk.Now().Format("2006-01-02T15:04:05.000000000Z")+"#2#op_new#requested", "HEAD")
	sort.Strings(wantKeys)
	sameValue(t, "items after the first write", sks, wantKeys)
	for sk, it := range all {
		ttl := tLegacy.Add(store.PaymentRetention).Unix() + 1 // tLegacy has a fraction: rounded up
		if strings.Contains(sk, "op_new") {
			ttl = clk.Now().Add(store.PaymentRetention).Unix() + 1 // the write's time + retention, rounded up
		}
		if ttlOf(t, it) != ttl {
			t.Errorf("%s: ttl %d, want %d", sk, ttlOf(t, it), ttl)
		}
	}

	moved, movedEntries := ledger(t, s, psp, refs...)
	want = want.Add(payments.Totals{CapturesInFlight: 150, Capturable: -150})
	if moved.Totals != want || moved.Version != 8 || moved.Authorised != 1000 || moved.Reference != "order-legacy" {
		t.Fatalf("moved head %+v; want Totals %+v, version 8", moved, want)
	}
	m := byRef(movedEntries)
	if len(movedEntries) != 4 || m["op_new"].Requested == nil {
		t.Fatalf("moved entries %+v", movedEntries)
	}
	for ref, before := range e {
		sameValue(t, "moved entry "+ref, m[ref], before)
	}
	after := timeline(t, s, psp, 2)
	if len(after) != 6 || after[5].ID != "op_new#requested" {
		t.Fatalf("moved timeline %v", ids(after))
	}
	sameValue(t, "moved timeline", after[:5], facts)
}

// TestLegacyInlinePaymentMovedByAPut: a record written before history
// items (its history in META's data) reads converted, and a head put moves
// it; its timeline — a dozen lines of one instant — keeps its order.
func TestLegacyInlinePaymentMovedByAPut(t *testing.T) {
	ctx := context.Background()
	client, table := newTable(t)
	clk := clock.NewFake(tLegacy.Add(time.Hour))
	s := dynamo.New(client, table, clk)
	const psp = "PSP_INLINE"
	old := legacyPayment(psp)
	old.Reservations, old.RefundReservations, old.CapturedValue, old.State, old.Version = nil, nil, 0, "Authorised", 2
	old.History = old.History[:2]
	for i := range 10 {
		old.History = append(old.History, oldEvent{At: tLegacy.Add(2 * time.Second), Kind: "details", Origin: "api", Detail: strconv.Itoa(i)})
	}
	putLegacy(t, client, table, old, true)

	h, _ := ledger(t, s, psp)
	if h.Version != 2 || h.Totals != (payments.Totals{Capturable: 1000}) {
		t.Fatalf("converted head %+v", h)
	}
	before := timeline(t, s, psp, 5)
	details := func(fs []payments.Fact) string {
		var b strings.Builder
		for _, f := range fs {
			b.WriteString(f.Kind + f.Detail + " ")
		}
		return b.String()
	}
	const order = "paymentAuthorised AUTHORISATION details0 details1 details2 details3 details4 details5 details6 details7 details8 details9 "
	if got := details(before); got != order {
		t.Fatalf("converted timeline %q, want %q", got, order)
	}

	next := h
	next.Reference, next.Version, next.UpdatedAt = "order-renamed", h.Version+1, clk.Now()
	write(t, s, payments.Write{PSP: psp, Put: &next, At: clk.Now()})
	moved, _ := ledger(t, s, psp)
	sameValue(t, "moved head", moved, next)
	after := timeline(t, s, psp, 5)
	if got := details(after); got != order {
		t.Fatalf("moved timeline %q, want %q", got, order)
	}
	sameValue(t, "moved timeline", after, before)
	if all := items(t, client, table, "PAYMENT#"+psp); len(all) != 13 || all["HEAD"] == nil || all["META"] != nil {
		t.Fatalf("items after the put: %s; want HEAD and 12 facts", keys(all))
	}
	// A stale put (from the legacy version) conflicts.
	stale := h
	stale.Version = h.Version + 1
	if err := s.Write(ctx, payments.Write{PSP: psp, Put: &stale, At: clk.Now()}); !errors.Is(err, storeerr.ErrConflict) {
		t.Fatalf("a put from the legacy version after the move: %v, want a conflict", err)
	}
}

// A legacy payment past its retention reads as absent, and is not moved.
func TestLegacyPaymentExpires(t *testing.T) {
	ctx := context.Background()
	client, table := newTable(t)
	clk := clock.NewFake(tLegacy.Add(store.PaymentRetention))
	s := dynamo.New(client, table, clk)
	putLegacy(t, client, table, legacyPayment("PSP_OLD"), false)
	if _, err := s.GetPayment(ctx, "PSP_OLD"); !errors.Is(err, storeerr.ErrNotFound) {
		t.Fatalf("GetPayment of a legacy payment past retention: %v, want ErrNotFound", err)
	}
	if err := s.Write(ctx, request("PSP_OLD", capture("op_1", 10, clk.Now()))); !errors.Is(err, storeerr.ErrConflict) {
		t.Fatalf("a capture of a legacy payment past retention: %v, want a conflict", err)
	}
	if all := items(t, client, table, "PAYMENT#PSP_OLD"); all["META"] == nil || all["HEAD"] != nil {
		t.Fatalf("items %s: moved", keys(all))
	}
}

// factKey is the sort key the adapter gives fact f.
func factKey(t *testing.T, f payments.Fact) string {
	t.Helper()
	it, err := dynamo.FactItem("PSP", f, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, sk := dynamo.Keys(it)
	return sk
}
