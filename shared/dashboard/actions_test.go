package dashboard

import (
	"strings"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/adminapi"
)

func TestPaymentFilter(t *testing.T) {
	day := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	rows := []adminapi.PaymentRow{
		{PSPReference: "QFQTPCQ8HXSKGK82", Reference: "order-1001", State: "Captured", CreatedAt: day},
		{PSPReference: "ABCDEFGH12345678", Reference: "order-2001", State: "Authorised", CreatedAt: day.AddDate(0, 0, 1)},
		{PSPReference: "ZZZZZZZZ00000000", Reference: "sub-1", State: "Authorised (simulator)", CreatedAt: day},
	}
	for _, tc := range []struct {
		f    paymentFilter
		want string
	}{
		{paymentFilter{}, "QFQTPCQ8HXSKGK82 ABCDEFGH12345678 ZZZZZZZZ00000000"},
		{paymentFilter{Text: "ORDER-"}, "QFQTPCQ8HXSKGK82 ABCDEFGH12345678"},
		{paymentFilter{Text: "hxskg"}, "QFQTPCQ8HXSKGK82"},
		{paymentFilter{State: "Authorised"}, "ABCDEFGH12345678"},
		{paymentFilter{Date: "2026-03-01"}, "QFQTPCQ8HXSKGK82 ZZZZZZZZ00000000"},
		{paymentFilter{Text: "order", Date: "2026-03-02"}, "ABCDEFGH12345678"},
		{paymentFilter{State: "Refunded"}, ""},
	} {
		var got []string
		for _, p := range tc.f.apply(rows, 20) {
			got = append(got, p.PSPReference)
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("%+v: %v, want %s", tc.f, got, tc.want)
		}
	}
	if got := (paymentFilter{}).apply(rows, 1); len(got) != 1 {
		t.Errorf("limit 1: %d rows", len(got))
	}
	if got := states(rows); strings.Join(got, ",") != "Authorised,Authorised (simulator),Captured" {
		t.Errorf("states %v", got)
	}
}

func TestBadgesAndTimelineKinds(t *testing.T) {
	for state, want := range map[string]string{
		"Captured": "badge ok", "PartiallyRefunded": "badge ok", "Authorised": "badge open", "Authorised (simulator)": "badge open",
		"Refused": "badge off", "Expired": "badge off", "RedirectShopper": "badge wait", "Received": "badge wait",
	} {
		if got := badgeClass(state); got != want {
			t.Errorf("%s: %s, want %s", state, got, want)
		}
	}
	if got := string(timelineKind("capture-requested", "api")); !strings.Contains(got, "→ capture requested") {
		t.Errorf("an API call: %s", got)
	}
	if got := string(timelineKind("CAPTURE", "notification")); !strings.Contains(got, "← <strong>CAPTURE</strong>") {
		t.Errorf("a notification: %s", got)
	}
	if got := string(renderValue(map[string]any{"type": "scheme", "brand": "visa"})); !strings.Contains(got, "<b>brand</b> visa") || strings.Contains(got, "{") {
		t.Errorf("an object: %s", got)
	}
}
