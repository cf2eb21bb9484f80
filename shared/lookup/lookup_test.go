package lookup

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/apperr"
	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/storeerr"
	"github.com/yp/paysvc/shared/tenant"
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

// The view hides internal references and bookkeeping entries and keeps
// the timeline oldest first.
func TestPaymentView(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	amt := money.Amount{Value: 300, Currency: "EUR"}
	ok := true
	p := payments.Payment{
		PSPReference: "PSP1", MerchantID: "m_a", SiteID: "site_a", Amount: money.Amount{Value: 1000, Currency: "EUR"},
		AuthorisedValue: 1000, CapturedValue: 1000, State: payments.StateCaptured, PaymentMethod: "visa",
		RefundReservations: map[string]int64{"op_secretkey": 300},
		History: []payments.Event{
			{At: t0.Add(2 * time.Second), Kind: "refund-requested", Origin: "api", PSPReference: "op_secretkey", Amount: &amt},
			{At: t0, Kind: "payment", Origin: "api", PSPReference: "PSP1", Detail: "Authorised"},
			{At: t0.Add(time.Second), Kind: "capture", Origin: "api", PSPReference: "CAP1", Detail: "received"},
			{At: t0.Add(3 * time.Second), Kind: "AUTHORISATION", Origin: "notification", PSPReference: "PSP1", Success: &ok},
			// the record took over its pending one: bookkeeping naming an internal key
			{At: t0, Kind: "bound", Origin: "api", PSPReference: "PSP1", Detail: payments.PendingKey("m_a", "site_a", "order-1")},
		},
	}
	v := paymentView(p)
	if v.RefundsInFlight.Value != 300 || v.Refundable.Value != 700 || v.PaymentMethod.Brand != "visa" {
		t.Fatalf("view %+v", v)
	}
	var kinds []string
	for _, e := range v.Timeline {
		kinds = append(kinds, e.Kind)
		if e.PSPReference == "op_secretkey" || (e.Kind == "capture" && e.Reason != "") || (e.Source == "api" && e.Success != nil) {
			t.Fatalf("entry %+v", e)
		}
	}
	if got := len(kinds); got != 4 || kinds[0] != "payment" || kinds[3] != "AUTHORISATION" {
		t.Fatalf("timeline %v", kinds)
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
		for _, err := range []error{err1, err2} {
			if e := apperr.As(err); err != nil && (e.Kind != apperr.Invalid || len(e.Fields) == 0) {
				t.Fatalf("%q: %v", raw, err)
			}
		}
		if err1 == nil && (ev.Limit < 1 || ev.Limit > MaxLimit) || err2 == nil && (dl.Limit < 1 || dl.Limit > MaxLimit) {
			t.Fatalf("%q: limits %d %d", raw, ev.Limit, dl.Limit)
		}
	})
}

type paymentsMap map[string]payments.Payment

func (m paymentsMap) GetPayment(_ context.Context, psp string) (payments.Payment, error) {
	p, ok := m[psp]
	if !ok {
		return payments.Payment{}, storeerr.ErrNotFound
	}
	return p, nil
}

// A pending record (a payment started with an action, kept under an
// internal key until it has a pspReference) is never answered as a
// payment, bound or not, even to its own merchant: 404 yp_3006 like an
// unknown payment. The payment under its pspReference is.
func TestPaymentLookupHidesPendingRecords(t *testing.T) {
	m, site := tenant.Merchant{ID: "m_a"}, tenant.Site{ID: "site_a", MerchantID: "m_a"}
	pending := payments.PendingKey("m_a", "site_a", "order-1")
	own := func(psp, bound string) payments.Payment {
		return payments.Payment{PSPReference: psp, MerchantID: "m_a", SiteID: "site_a", Reference: "order-1", BoundTo: bound}
	}
	s := New(paymentsMap{
		pending:      own(pending, "PSP1"),
		"pending_x1": own("pending_x1", ""),
		"PSP1":       own("PSP1", ""),
		"PSP_BOUND":  own("PSP_BOUND", "PSP1"), // a bound record under any key
	}, nil, nil)
	for _, psp := range []string{pending, "pending_x1", "PSP_BOUND", "pending_unknown"} {
		_, err := s.Payment(context.Background(), m, site, psp)
		if e := apperr.As(err); e.Kind != apperr.PaymentNotFound {
			t.Errorf("lookup of %s: %v, want payment not found", psp, err)
		}
	}
	v, err := s.Payment(context.Background(), m, site, "PSP1")
	if err != nil || v.PSPReference != "PSP1" {
		t.Fatalf("lookup of the payment: %+v, %v", v, err)
	}
}
