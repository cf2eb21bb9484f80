package lookup

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/notifications"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/webhooks"
)

// PaymentView is GET payments/{pspReference}'s answer: the payment's
// amounts and state (the fold of its ledger) and the first page of its
// timeline, without what the merchant must not see (routing metadata, the
// service's internal operation references, shopper tokens, versions).
type PaymentView struct {
	PSPReference      string       `json:"pspReference"`
	MerchantReference string       `json:"merchantReference,omitempty"`
	SiteID            string       `json:"siteId"`
	Amount            money.Amount `json:"amount"`
	Authorised        money.Amount `json:"authorisedAmount"`
	Captured          money.Amount `json:"capturedAmount"`
	Refunded          money.Amount `json:"refundedAmount"`
	CapturesInFlight  money.Amount `json:"capturesInFlight"`
	RefundsInFlight   money.Amount `json:"refundsInFlight"`
	Refundable        money.Amount `json:"refundableAmount"`
	Capturable        money.Amount `json:"capturableAmount"`
	// AuthorisationExpiresAt is when the platform expires the uncaptured
	// remainder, and AuthorisationExpirySource where that time comes from
	// (docs/expiry.md): present while something is capturable.
	AuthorisationExpiresAt    *time.Time      `json:"authorisationExpiresAt,omitempty"`
	AuthorisationExpirySource string          `json:"authorisationExpirySource,omitempty"`
	State                     payments.State  `json:"state"`
	RefusalReason             string          `json:"refusalReason,omitempty"`
	PaymentMethod             *PaymentMethod  `json:"paymentMethod,omitempty"`
	Source                    payments.Source `json:"paymentSource,omitempty"`
	CreatedAt                 time.Time       `json:"createdAt"`
	UpdatedAt                 time.Time       `json:"updatedAt"`
	// Timeline is the first page of the timeline; TimelineNext, when set,
	// is where GET …/timeline?startingAfter= continues it.
	Timeline     []TimelineEntry `json:"timeline"`
	TimelineNext string          `json:"timelineNext,omitempty"`
}

// PSP reports the payment's pspReference for the request log.
func (v PaymentView) PSP() string { return v.PSPReference }

// PaymentMethod is the payment method of a payment.
type PaymentMethod struct {
	Brand string `json:"brand"`
}

// TimelineEntry is one API operation or notification of a payment.
type TimelineEntry struct {
	Time   time.Time     `json:"time"`
	Kind   string        `json:"kind"`   // e.g. payment, capture, refund-requested, AUTHORISATION, REFUND
	Source string        `json:"source"` // api or notification
	Amount *money.Amount `json:"amount,omitempty"`
	// Success is the notification's outcome (absent for API operations).
	Success *bool `json:"success,omitempty"`
	// PSPReference is the operation's own pspReference (a capture's,
	// refund's, …), absent for operations the platform had not answered.
	PSPReference string `json:"pspReference,omitempty"`
	Reason       string `json:"reason,omitempty"`
}

// TimelineView is a page of a payment's timeline
// (GET payments/{pspReference}/timeline).
type TimelineView struct {
	Data    []TimelineEntry `json:"data"`
	HasMore bool            `json:"hasMore"`
	Next    string          `json:"next,omitempty"`
}

// internalRef marks the service's own operation references (not shown).
const internalRef = "op_"

func paymentView(h payments.Head) PaymentView {
	cur := h.Amount.Currency
	amt := func(v int64) money.Amount { return money.Amount{Value: v, Currency: cur} }
	v := h.View()
	out := PaymentView{
		PSPReference: h.PSPReference, MerchantReference: h.Reference, SiteID: h.SiteID, Amount: v.Amount,
		Authorised: amt(v.Authorised), Captured: amt(v.Captured), Refunded: amt(v.Refunded),
		CapturesInFlight: amt(v.CapturesInFlight), RefundsInFlight: amt(v.RefundsInFlight), Refundable: amt(v.Refundable),
		Capturable: amt(v.Capturable), State: v.State, RefusalReason: h.RefusalReason, Source: h.Source,
		CreatedAt: h.CreatedAt.UTC(), UpdatedAt: h.UpdatedAt.UTC(), Timeline: []TimelineEntry{},
	}
	if h.PaymentMethod != "" {
		out.PaymentMethod = &PaymentMethod{Brand: h.PaymentMethod}
	}
	if at, src, ok := h.AuthorisationExpiry(); ok {
		at = at.UTC()
		out.AuthorisationExpiresAt, out.AuthorisationExpirySource = &at, src
	}
	return out
}

// timelineOf is the merchant's view of timeline facts.
func timelineOf(facts []payments.Fact) []TimelineEntry {
	out := make([]TimelineEntry, 0, len(facts))
	for _, f := range facts {
		t := TimelineEntry{Time: f.At.UTC(), Kind: f.Kind, Source: f.Origin, Amount: f.Amount, Success: f.Success,
			PSPReference: f.PSPReference, Reason: f.Detail}
		if strings.HasPrefix(t.PSPReference, internalRef) || payments.IsPendingKey(t.PSPReference) {
			t.PSPReference = ""
		}
		if f.Origin != payments.OriginNotification {
			t.Success = nil
			if f.Detail == "received" { // the platform's status of every modification
				t.Reason = ""
			}
		}
		out = append(out, t)
	}
	return out
}

// EventView is one event of the history: the webhook body as delivered.
type EventView struct {
	ID                  string          `json:"id"`
	EventCode           string          `json:"eventCode"`
	PSPReference        string          `json:"pspReference"`
	PaymentPSPReference string          `json:"paymentPspReference"`
	CreatedAt           time.Time       `json:"createdAt"`
	Payload             json.RawMessage `json:"payload"`
}

func eventView(e notifications.MerchantEvent) EventView {
	return EventView{ID: e.ID, EventCode: e.EventCode, PSPReference: e.PSPReference, PaymentPSPReference: e.PaymentPSP,
		CreatedAt: e.CreatedAt.UTC(), Payload: e.Payload}
}

// EventPage is GET events' answer.
type EventPage struct {
	Data    []EventView `json:"data"`
	HasMore bool        `json:"hasMore"`
}

// DeliveryView is a webhook delivery as its merchant sees it.
type DeliveryView struct {
	ID             string     `json:"id"` // the X-Webhook-Id
	SubscriptionID string     `json:"subscriptionId"`
	EventID        string     `json:"eventId"`
	EventCode      string     `json:"eventCode"`
	PSPReference   string     `json:"pspReference"`
	Status         string     `json:"status"`
	Attempts       int        `json:"attempts"`
	LastStatusCode int        `json:"lastStatusCode,omitempty"`
	LastError      string     `json:"lastError,omitempty"`
	LastAttemptAt  *time.Time `json:"lastAttemptAt,omitempty"`
	NextAttemptAt  *time.Time `json:"nextAttemptAt,omitempty"`
	DeliveredAt    *time.Time `json:"deliveredAt,omitempty"`
	CreatedAt      time.Time  `json:"createdAt"`
	UpdatedAt      time.Time  `json:"updatedAt"`
}

// PSP reports the delivery's payment for the request log.
func (v DeliveryView) PSP() string { return v.PSPReference }

// DeliveryViewOf is d as its merchant sees it.
func DeliveryViewOf(d webhooks.Delivery) DeliveryView {
	utc := func(t *time.Time) *time.Time {
		if t == nil {
			return nil
		}
		u := t.UTC()
		return &u
	}
	return DeliveryView{
		ID: d.ID, SubscriptionID: d.SubscriptionID, EventID: d.EventID, EventCode: d.EventCode, PSPReference: d.PSPReference,
		Status: string(d.Status), Attempts: d.Attempts, LastStatusCode: d.LastStatusCode, LastError: d.LastError,
		LastAttemptAt: utc(d.LastAttemptAt), NextAttemptAt: utc(d.NextAttemptAt), DeliveredAt: utc(d.DeliveredAt),
		CreatedAt: d.CreatedAt.UTC(), UpdatedAt: d.UpdatedAt.UTC(),
	}
}

// DeliveryPage is GET webhook-deliveries' answer.
type DeliveryPage struct {
	Data    []DeliveryView `json:"data"`
	HasMore bool           `json:"hasMore"`
}
