package lookup

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/yp/paysvc/shared/apperr"
	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/testutil/memledger"
)

func TestParseEvents(t *testing.T) {
	for _, tc := range []struct {
		query, field string
		want         EventsInput
	}{
		{"", "", EventsInput{Limit: DefaultLimit}},
		{"limit=100&startingAfter=evt_1&pspReference=PSP1&eventCode=REFUND_FAILED", "", EventsInput{Limit: 100, StartingAfter: "evt_1", PSPReference: "PSP1", EventCode: "REFUND_FAILED"}},
		{"limit=0", "limit", EventsInput{}},
		{"limit=101", "limit", EventsInput{}},
		{"limit=1.5", "limit", EventsInput{}},
		{"limit=1&limit=1", "limit", EventsInput{}},
		{"eventCode=capture", "eventCode", EventsInput{}},
		{"pspReference=a%20b", "pspReference", EventsInput{}},
		{"startingAfter=", "startingAfter", EventsInput{}},
		{"status=failed", "status", EventsInput{}},
	} {
		v, _ := url.ParseQuery(tc.query)
		got, err := ParseEvents(v)
		if tc.field == "" {
			if err != nil || got != tc.want {
				t.Errorf("%q: %+v, %v", tc.query, got, err)
			}
			continue
		}
		if e := apperr.As(err); e.Kind != apperr.Invalid || len(e.Fields) == 0 || e.Fields[0].Field != tc.field {
			t.Errorf("%q: %v, want 400 naming %s", tc.query, err, tc.field)
		}
	}
}

func TestParseDeliveries(t *testing.T) {
	v, _ := url.ParseQuery("status=failed&limit=5&startingAfter=msg_abc")
	got, err := ParseDeliveries(v)
	if err != nil || got.Status != "failed" || got.Limit != 5 || got.StartingAfter != "msg_abc" {
		t.Fatalf("%+v, %v", got, err)
	}
	for q, field := range map[string]string{"status=lost": "status", "limit=-1": "limit", "eventCode=X": "eventCode"} {
		v, _ := url.ParseQuery(q)
		_, err := ParseDeliveries(v)
		if e := apperr.As(err); e.Kind != apperr.Invalid || e.Fields[0].Field != field {
			t.Errorf("%q: %v", q, err)
		}
	}
}

// ledger writes head h (Version 1, its Totals the fold of entries) with
// its entries and facts, in the order given.
func ledger(t *testing.T, st payments.Store, h payments.Head, entries []payments.Entry, facts ...payments.Fact) {
	t.Helper()
	h.Version, h.Totals = 1, payments.Fold(h, entries)
	if err := st.Write(context.Background(), payments.Write{PSP: h.PSPReference, Put: &h, Entries: entries, Facts: facts}); err != nil {
		t.Fatal(err)
	}
}

// The view shows the amounts and state of the ledger's fold and its
// timeline as the store keeps it (oldest first), hiding the service's
// internal references and its own statuses.
func TestPaymentView(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	amt := money.Amount{Value: 300, Currency: "EUR"}
	full := money.Amount{Value: 1000, Currency: "EUR"}
	ok := true
	st := memledger.New(clock.NewFake(t0))
	m, site := tenant.Merchant{ID: "m_a"}, tenant.Site{ID: "site_a", MerchantID: "m_a"}
	ledger(t, st, payments.Head{
		PSPReference: "PSP1", MerchantID: "m_a", SiteID: "site_a", Amount: full, Authorised: 1000, PaymentMethod: "visa",
		CaptureMode: tenant.CaptureManual, Auth: payments.Auth{ResultCode: "Authorised", Notified: &ok}, CreatedAt: t0, UpdatedAt: t0,
	}, []payments.Entry{
		{Ref: "CAP1", Kind: payments.OpCapture, Modification: "CAP1", Version: 1,
			Requested: &payments.Request{Amount: full, At: t0}, Answered: &payments.Answer{Outcome: payments.Received, At: t0}},
		{Ref: "op_secretkey", Kind: payments.OpRefund, Version: 1, Requested: &payments.Request{Amount: amt, At: t0}},
	},
		payments.Fact{ID: "f1", At: t0, Kind: "payment", Origin: payments.OriginAPI, PSPReference: "PSP1", Detail: "Authorised"},
		payments.Fact{ID: "f2", At: t0.Add(time.Second), Kind: "capture", Origin: payments.OriginAPI, PSPReference: "CAP1", Detail: "received", Amount: &full},
		payments.Fact{ID: "f3", At: t0.Add(2 * time.Second), Kind: "refund-requested", Origin: payments.OriginAPI, PSPReference: "op_secretkey", Amount: &amt},
		// a fact naming an internal key (a pending record's)
		payments.Fact{ID: "f4", At: t0.Add(2 * time.Second), Kind: "details", Origin: payments.OriginAPI,
			PSPReference: payments.PendingKey("m_a", "site_a", "order-1"), Detail: "Authorised"},
		payments.Fact{ID: "f5", At: t0.Add(3 * time.Second), Kind: "AUTHORISATION", Origin: payments.OriginNotification, PSPReference: "PSP1", Success: &ok},
	)
	v, err := New(st, nil, nil).Payment(context.Background(), m, site, "PSP1")
	if err != nil {
		t.Fatal(err)
	}
	if v.State != payments.StateCaptured || v.Captured.Value != 1000 || v.RefundsInFlight.Value != 300 || v.Refundable.Value != 700 ||
		v.Refundable.Currency != "EUR" || v.PaymentMethod.Brand != "visa" {
		t.Fatalf("view %+v", v)
	}
	var kinds []string
	for _, e := range v.Timeline {
		kinds = append(kinds, e.Kind)
		if strings.HasPrefix(e.PSPReference, "op_") || payments.IsPendingKey(e.PSPReference) || (e.Kind == "capture" && e.Reason != "") ||
			(e.Source == "api" && e.Success != nil) {
			t.Fatalf("entry %+v", e)
		}
	}
	if got := strings.Join(kinds, " "); got != "payment capture refund-requested details AUTHORISATION" || v.TimelineNext != "" {
		t.Fatalf("timeline %v, next %q", got, v.TimelineNext)
	}
	if e := v.Timeline[1]; e.PSPReference != "CAP1" || e.Amount == nil || *e.Amount != full {
		t.Fatalf("capture entry %+v", e)
	}
}

// GET payment holds the first page of the timeline and where it goes on;
// GET …/timeline pages through the rest, for the payment's own site only.
func TestPaymentTimelinePages(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ok := true
	st := memledger.New(clock.NewFake(t0))
	m, site := tenant.Merchant{ID: "m_a"}, tenant.Site{ID: "site_a", MerchantID: "m_a"}
	const n = TimelinePage*2 + 3
	facts := make([]payments.Fact, n)
	for i := range facts {
		facts[i] = payments.Fact{ID: fmt.Sprintf("f%03d", i), At: t0.Add(time.Duration(i) * time.Second), Kind: "AUTHORISATION",
			Origin: payments.OriginNotification, PSPReference: "PSP1", Success: &ok, Detail: fmt.Sprint(i)}
	}
	ledger(t, st, payments.Head{PSPReference: "PSP1", MerchantID: "m_a", SiteID: "site_a",
		Amount: money.Amount{Value: 1000, Currency: "EUR"}, Auth: payments.Auth{Notified: &ok}, Authorised: 1000, CreatedAt: t0}, nil, facts...)
	s := New(st, nil, nil)
	ctx := context.Background()
	v, err := s.Payment(ctx, m, site, "PSP1")
	if err != nil || len(v.Timeline) != TimelinePage || v.TimelineNext == "" {
		t.Fatalf("first page: %d entries, next %q, %v", len(v.Timeline), v.TimelineNext, err)
	}
	got := v.Timeline
	cursor, pages := v.TimelineNext, 1
	for cursor != "" {
		page, err := s.Timeline(ctx, m, site, "PSP1", cursor)
		if err != nil || len(page.Data) > TimelinePage || page.HasMore != (page.Next != "") {
			t.Fatalf("page after %q: %+v, %v", cursor, page, err)
		}
		got, cursor, pages = append(got, page.Data...), page.Next, pages+1
	}
	if len(got) != n || pages != 3 {
		t.Fatalf("%d entries in %d pages, want %d in 3", len(got), pages, n)
	}
	for i, e := range got {
		if e.Reason != fmt.Sprint(i) {
			t.Fatalf("entry %d: %+v (order)", i, e)
		}
	}
	other := tenant.Site{ID: "site_b", MerchantID: "m_a"}
	if _, err := s.Timeline(ctx, m, other, "PSP1", ""); apperr.As(err).Kind != apperr.PaymentNotFound {
		t.Errorf("timeline of another site's payment: %v, want payment not found", err)
	}
	if _, err := s.Timeline(ctx, m, site, "PSP_NONE", ""); apperr.As(err).Kind != apperr.PaymentNotFound {
		t.Errorf("timeline of an unknown payment: %v, want payment not found", err)
	}
	_, err = s.Timeline(ctx, m, site, "PSP1", "not-a-cursor")
	if e := apperr.As(err); e.Kind != apperr.Invalid || len(e.Fields) == 0 || e.Fields[0].Field != "startingAfter" {
		t.Errorf("timeline after a foreign cursor: %v, want 400 naming startingAfter", err)
	}
}

func TestParseTimeline(t *testing.T) {
	for q, want := range map[string]string{"": "", "startingAfter=F%232026-01-02T03%3A04%3A05.000000000Z%23f1": "F#2026-01-02T03:04:05.000000000Z#f1", "startingAfter=12": "12"} {
		v, _ := url.ParseQuery(q)
		if got, err := ParseTimeline(v); err != nil || got != want {
			t.Errorf("%q: %q, %v", q, got, err)
		}
	}
	for _, q := range []string{"startingAfter=", "startingAfter=a%20b", "limit=5", "startingAfter=1&startingAfter=2"} {
		v, _ := url.ParseQuery(q)
		if _, err := ParseTimeline(v); apperr.As(err).Kind != apperr.Invalid {
			t.Errorf("%q: %v, want 400", q, err)
		}
	}
}

// Any query: a refusal is a 400 naming a field, an accepted one is in range.
func FuzzParseQueries(f *testing.F) {
	for _, s := range []string{"", "limit=10&startingAfter=evt_1", "limit=0", "status=failed&limit=100", "eventCode=REFUND&pspReference=P", "a=%zz"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		v, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		ev, err1 := ParseEvents(v)
		dl, err2 := ParseDeliveries(v)
		_, err3 := ParseTimeline(v)
		for _, err := range []error{err1, err2, err3} {
			if e := apperr.As(err); err != nil && (e.Kind != apperr.Invalid || len(e.Fields) == 0) {
				t.Fatalf("%q: %v", raw, err)
			}
		}
		if err1 == nil && (ev.Limit < 1 || ev.Limit > MaxLimit) || err2 == nil && (dl.Limit < 1 || dl.Limit > MaxLimit) {
			t.Fatalf("%q: limits %d %d", raw, ev.Limit, dl.Limit)
		}
	})
}

// A pending record (a payment started with an action, kept under an
// internal key until it has a pspReference) is never answered as a
// payment, bound or not, even to its own merchant: 404 yp_3006 like an
// unknown payment. The payment under its pspReference is.
func TestPaymentLookupHidesPendingRecords(t *testing.T) {
	m, site := tenant.Merchant{ID: "m_a"}, tenant.Site{ID: "site_a", MerchantID: "m_a"}
	pending := payments.PendingKey("m_a", "site_a", "order-1")
	st := memledger.New(clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)))
	own := func(psp, bound string) {
		ledger(t, st, payments.Head{PSPReference: psp, MerchantID: "m_a", SiteID: "site_a", Reference: "order-1", BoundTo: bound}, nil)
	}
	own(pending, "PSP1")
	own("pending_x1", "")
	own("PSP1", "")
	own("PSP_BOUND", "PSP1") // a bound record under any key
	s := New(st, nil, nil)
	for _, psp := range []string{pending, "pending_x1", "PSP_BOUND", "pending_unknown"} {
		_, err := s.Payment(context.Background(), m, site, psp)
		if e := apperr.As(err); e.Kind != apperr.PaymentNotFound {
			t.Errorf("lookup of %s: %v, want payment not found", psp, err)
		}
		_, err = s.Timeline(context.Background(), m, site, psp, "")
		if e := apperr.As(err); e.Kind != apperr.PaymentNotFound {
			t.Errorf("timeline of %s: %v, want payment not found", psp, err)
		}
	}
	v, err := s.Payment(context.Background(), m, site, "PSP1")
	if err != nil || v.PSPReference != "PSP1" {
		t.Fatalf("lookup of the payment: %+v, %v", v, err)
	}
}

// meetingReads is a Payments whose head read waits for the timeline read
// and the other way round: the two complete only when made at once.
type meetingReads struct {
	Payments
	head, page chan struct{}
}

func (r *meetingReads) GetPayment(ctx context.Context, psp string) (payments.Head, error) {
	close(r.head)
	<-r.page
	return r.Payments.GetPayment(ctx, psp)
}

func (r *meetingReads) Timeline(ctx context.Context, psp, cursor string, limit int) ([]payments.Fact, string, error) {
	close(r.page)
	<-r.head
	return r.Payments.Timeline(ctx, psp, cursor, limit)
}

// GET payment and GET timeline read the payment's head (its owner) and the
// page at once: one store step after the rate-limit hit, not two. Read one
// after the other, the fake's reads wait for each other for good, which
// synctest reports as a deadlock.
func TestLookupsReadHeadAndPageAtOnce(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ok := true
	st := memledger.New(clock.NewFake(t0))
	m, site := tenant.Merchant{ID: "m_a"}, tenant.Site{ID: "site_a", MerchantID: "m_a"}
	ledger(t, st, payments.Head{PSPReference: "PSP1", MerchantID: "m_a", SiteID: "site_a",
		Amount: money.Amount{Value: 1000, Currency: "EUR"}, Auth: payments.Auth{Notified: &ok}, Authorised: 1000, CreatedAt: t0}, nil,
		payments.Fact{ID: "f1", At: t0, Kind: "AUTHORISATION", Origin: payments.OriginNotification, PSPReference: "PSP1", Success: &ok})
	meet := func() *Service {
		return New(&meetingReads{Payments: st, head: make(chan struct{}), page: make(chan struct{})}, nil, nil)
	}
	ctx := context.Background()
	synctest.Test(t, func(t *testing.T) {
		v, err := meet().Payment(ctx, m, site, "PSP1")
		if err != nil || len(v.Timeline) != 1 {
			t.Errorf("payment: %+v, %v", v, err)
		}
		page, err := meet().Timeline(ctx, m, site, "PSP1", "")
		if err != nil || len(page.Data) != 1 {
			t.Errorf("timeline: %+v, %v", page, err)
		}
		other := tenant.Site{ID: "site_b", MerchantID: "m_a"}
		if _, err := meet().Timeline(ctx, m, other, "PSP1", ""); apperr.As(err).Kind != apperr.PaymentNotFound {
			t.Errorf("timeline of another site's payment: %v, want payment not found", err)
		}
	})
}
