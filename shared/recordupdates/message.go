// Package recordupdates holds the adapters of the payment domain's
// PendingUpdates port: record updates after an upstream answer that the
// request could not apply (the store kept failing) are kept here and
// applied later with payments.ApplyRecordUpdate until they land
// (docs/payments.md).
//
// The update travels as a JSON message (Encode, Decode). Locally, Local
// keeps it in the embedded store (a bbolt bucket: a crash cannot lose it)
// and retries it in-process with backoff; in AWS, package sqsupdates sends
// it to the record updates queue, whose consumer function applies it.
package recordupdates

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/tenant"
)

// messageVersion is the format of the messages written here.
const messageVersion = 1

// message is the JSON form of a payments.RecordUpdate.
type message struct {
	V            int           `json:"v"`
	Kind         string        `json:"kind"`
	PSPReference string        `json:"pspReference,omitempty"`
	Op           string        `json:"op,omitempty"`
	Modification string        `json:"modification,omitempty"`
	Amount       *money.Amount `json:"amount,omitempty"`
	Status       string        `json:"status,omitempty"`
	Reason       string        `json:"reason,omitempty"`
	Payment      *paymentFacts `json:"payment,omitempty"`
	Session      *session      `json:"session,omitempty"`
	At           time.Time     `json:"at"`
}

type paymentFacts struct {
	MerchantID         string        `json:"merchantId"`
	SiteID             string        `json:"siteId"`
	Reference          string        `json:"reference,omitempty"`
	PendingReference   string        `json:"pendingReference,omitempty"`
	Amount             *money.Amount `json:"amount,omitempty"`
	ShopperReference   string        `json:"shopperReference,omitempty"`
	StoredMethodID     string        `json:"storedMethodId,omitempty"`
	StorePaymentMethod bool          `json:"storePaymentMethod,omitempty"`
	AuthorisationType  string        `json:"authorisationType,omitempty"`
	CaptureMode        string        `json:"captureMode,omitempty"`
	RefusalReason      string        `json:"refusalReason,omitempty"`
	PaymentMethod      string        `json:"paymentMethod,omitempty"`
	ActionPaymentData  string        `json:"actionPaymentData,omitempty"`
}

type session struct {
	ID                 string       `json:"id"`
	MerchantID         string       `json:"merchantId"`
	SiteID             string       `json:"siteId"`
	Reference          string       `json:"reference,omitempty"`
	Amount             money.Amount `json:"amount"`
	ShopperReference   string       `json:"shopperReference,omitempty"`
	StorePaymentMethod bool         `json:"storePaymentMethod,omitempty"`
	CreatedAt          time.Time    `json:"createdAt"`
	ExpiresAt          time.Time    `json:"expiresAt"`
}

// ErrMalformed: a message body is not a record update this version can
// apply.
var ErrMalformed = errors.New("recordupdates: malformed record update")

// Encode renders u as a message body.
func Encode(u payments.RecordUpdate) ([]byte, error) {
	if err := u.Validate(); err != nil {
		return nil, err
	}
	m := message{V: messageVersion, Kind: string(u.Kind), PSPReference: u.PSPReference, Op: u.Op,
		Modification: u.Modification, Status: u.Status, Reason: u.Reason, At: u.At.UTC()}
	if u.Amount != (money.Amount{}) {
		a := u.Amount
		m.Amount = &a
	}
	if f := u.Payment; f != nil {
		m.Payment = &paymentFacts{
			MerchantID: f.MerchantID, SiteID: f.SiteID, Reference: f.Reference, PendingReference: f.PendingReference,
			ShopperReference: f.ShopperReference, StoredMethodID: f.StoredMethodID, StorePaymentMethod: f.StorePaymentMethod,
			AuthorisationType: f.AuthorisationType, CaptureMode: string(f.CaptureMode), RefusalReason: f.RefusalReason,
			PaymentMethod: f.PaymentMethod, ActionPaymentData: f.ActionPaymentData,
		}
		if f.Amount != (money.Amount{}) {
			a := f.Amount
			m.Payment.Amount = &a
		}
	}
	if s := u.Session; s != nil {
		m.Session = &session{ID: s.ID, MerchantID: s.MerchantID, SiteID: s.SiteID, Reference: s.Reference,
			Amount: s.Amount, ShopperReference: s.ShopperReference, StorePaymentMethod: s.StorePaymentMethod,
			CreatedAt: s.CreatedAt.UTC(), ExpiresAt: s.ExpiresAt.UTC()}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("recordupdates: encode: %w", err)
	}
	return b, nil
}

// Decode parses a message body made by Encode (ErrMalformed when it is
// not one).
func Decode(body []byte) (payments.RecordUpdate, error) {
	var m message
	if err := json.Unmarshal(body, &m); err != nil {
		return payments.RecordUpdate{}, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if m.V != messageVersion {
		return payments.RecordUpdate{}, fmt.Errorf("%w: version %d", ErrMalformed, m.V)
	}
	u := payments.RecordUpdate{Kind: payments.UpdateKind(m.Kind), PSPReference: m.PSPReference, Op: m.Op,
		Modification: m.Modification, Status: m.Status, Reason: m.Reason, At: m.At}
	if m.Amount != nil {
		u.Amount = *m.Amount
	}
	if f := m.Payment; f != nil {
		u.Payment = &payments.PaymentFacts{
			MerchantID: f.MerchantID, SiteID: f.SiteID, Reference: f.Reference, PendingReference: f.PendingReference,
			ShopperReference: f.ShopperReference, StoredMethodID: f.StoredMethodID, StorePaymentMethod: f.StorePaymentMethod,
			AuthorisationType: f.AuthorisationType, CaptureMode: tenant.CaptureMode(f.CaptureMode), RefusalReason: f.RefusalReason,
			PaymentMethod: f.PaymentMethod, ActionPaymentData: f.ActionPaymentData,
		}
		if f.Amount != nil {
			u.Payment.Amount = *f.Amount
		}
	}
	if s := m.Session; s != nil {
		u.Session = &payments.Session{ID: s.ID, MerchantID: s.MerchantID, SiteID: s.SiteID, Reference: s.Reference,
			Amount: s.Amount, ShopperReference: s.ShopperReference, StorePaymentMethod: s.StorePaymentMethod,
			CreatedAt: s.CreatedAt, ExpiresAt: s.ExpiresAt}
	}
	if err := u.Validate(); err != nil {
		return payments.RecordUpdate{}, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return u, nil
}

// Permanent reports whether an error of Decode or ApplyRecordUpdate means
// the update can never apply: retrying it is useless.
func Permanent(err error) bool {
	return errors.Is(err, ErrMalformed) || errors.Is(err, payments.ErrUpdateRefused)
}
