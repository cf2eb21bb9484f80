package lookup

import (
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/notifications"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/webhooks"
)

// PaymentView is GET payments/{pspReference}'s answer: the record without
// what the merchant must not see (routing metadata, reservations by
// internal operation reference, shopper tokens, versions).
type PaymentView struct {
	PSPReference      string          `json:"pspReference"`
	MerchantReference string          `json:"merchantReference,omitempty"`
	SiteID            string          `json:"siteId"`
	Amount            money.Amount    `json:"amount"`
	Authorised        money.Amount    `json:"authorisedAmount"`
	Captured          money.Amount    `json:"capturedAmount"`
	Refunded          money.Amount    `json:"refundedAmount"`
	CapturesInFlight  money.Amount    `json:"capturesInFlight"`
	RefundsInFlight   money.Amount    `json:"refundsInFlight"`
	Refundable        money.Amount    `json:"refundableAmount"`
	State             payments.State  `json:"state"`
	RefusalReason     string          `json:"refusalReason,omitempty"`
	PaymentMethod     *PaymentMethod  `json:"paymentMethod,omitempty"`
	Source            payments.Source `json:"paymentSource,omitempty"`
	CreatedAt         time.Time       `json:"createdAt"`
	UpdatedAt         time.Time       `json:"updatedAt"`
	Timeline          []TimelineEntry `json:"timeline"`
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

// internalRef marks the service's own operation references (not shown).
const internalRef = "op_"

func paymentView(p payments.Payment) PaymentView {
	cur := p.Amount.Currency
	amt := func(v int64) money.Amount { return money.Amount{Value: v, Currency: cur} }
	v := PaymentView{
		PSPReference: p.PSPReference, MerchantReference: p.Reference, SiteID: p.SiteID, Amount: p.Amount,
		Authorised: amt(p.AuthorisedValue), Captured: amt(p.CapturedValue), Refunded: amt(p.RefundedValue),
		CapturesInFlight: amt(p.CapturesInFlight()), RefundsInFlight: amt(p.RefundsInFlight()), Refundable: amt(p.Refundable()),
		State: p.State, RefusalReason: p.RefusalReason, Source: p.Source,
		CreatedAt: p.CreatedAt.UTC(), UpdatedAt: p.UpdatedAt.UTC(), Timeline: make([]TimelineEntry, 0, len(p.History)),
	}
	if p.PaymentMethod != "" {
		v.PaymentMethod = &PaymentMethod{Brand: p.PaymentMethod}
	}
	for _, e := range p.History {
		if e.Internal() {
			continue
		}
		t := TimelineEntry{Time: e.At.UTC(), Kind: e.Kind, Source: e.Origin, Amount: e.Amount, Success: e.Success, PSPReference: e.PSPReference, Reason: e.Detail}
		if strings.HasPrefix(t.PSPReference, internalRef) || payments.IsPendingKey(t.PSPReference) {
			t.PSPReference = ""
		}
		if payments.IsPendingKey(t.Reason) {
			t.Reason = ""
		}
		if e.Origin != payments.OriginNotification {
			t.Success = nil
			if e.Detail == "received" { // the platform's status of every modification
				t.Reason = ""
			}
		}
		v.Timeline = append(v.Timeline, t)
	}
	// History is appended in order; keep it oldest first even if clocks
	// of concurrent writers disagree slightly.
	sortTimeline(v.Timeline)
	return v
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

func sortTimeline(t []TimelineEntry) {
	slices.SortStableFunc(t, func(a, b TimelineEntry) int { return a.Time.Compare(b.Time) })
}
