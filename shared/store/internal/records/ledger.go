package records

import (
	"time"

	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/tenant"
)

// The stored forms of a payment's ledger (payments.Head, Entry, Fact).

// PaymentHead is a stored payment head.
type PaymentHead struct {
	Format           Format         `json:"format"`
	PSPReference     string         `json:"pspReference"`
	MerchantID       string         `json:"merchantId"`
	SiteID           string         `json:"siteId,omitempty"`
	Reference        string         `json:"reference,omitempty"`
	Source           string         `json:"source,omitempty"`
	SessionID        string         `json:"sessionId,omitempty"`
	Amount           *Amount        `json:"amount,omitempty"`
	ShopperReference string         `json:"shopperReference,omitempty"`
	StoredMethodID   string         `json:"storedPaymentMethodId,omitempty"`
	StorePayment     bool           `json:"storePaymentMethod,omitempty"`
	AuthType         string         `json:"authorisationType,omitempty"`
	CaptureMode      string         `json:"captureMode,omitempty"`
	PaymentMethod    string         `json:"paymentMethod,omitempty"`
	RefusalReason    string         `json:"refusalReason,omitempty"`
	ResultCode       string         `json:"resultCode,omitempty"`
	AuthNotified     *bool          `json:"authNotified,omitempty"`
	Expired          bool           `json:"expired,omitempty"`
	Authorised       int64          `json:"authorised,omitempty"`
	AmountUpdates    []AmountUpdate `json:"amountUpdates,omitempty"`
	Totals           Totals         `json:"totals"`
	Seq              int64          `json:"seq,omitempty"`
	BoundTo          string         `json:"boundTo,omitempty"`
	AuthorisedAt     *time.Time     `json:"authorisedAt,omitempty"`
	ExpiryNoticeDone bool           `json:"expiryNoticeDone,omitempty"`
	CreatedAt        time.Time      `json:"createdAt"`
	UpdatedAt        time.Time      `json:"updatedAt"`
	Version          int64          `json:"version"`
}

// AmountUpdate is a stored accepted amount update.
type AmountUpdate struct {
	Ref    string `json:"ref"`
	Amount int64  `json:"amount"`
	From   int64  `json:"from"`
	Failed bool   `json:"failed,omitempty"`
}

// Totals is a head's stored fold.
type Totals struct {
	Captured              int64 `json:"captured,omitempty"`
	CapturesInFlight      int64 `json:"capturesInFlight,omitempty"`
	Refunded              int64 `json:"refunded,omitempty"`
	RefundsInFlight       int64 `json:"refundsInFlight,omitempty"`
	Capturable            int64 `json:"capturable,omitempty"`
	Refundable            int64 `json:"refundable,omitempty"`
	Reversals             int64 `json:"reversals,omitempty"`
	ReversalsInFlight     int64 `json:"reversalsInFlight,omitempty"`
	AmountUpdatesInFlight int64 `json:"amountUpdatesInFlight,omitempty"`
	Released              int64 `json:"released,omitempty"`
	Expired               int64 `json:"expired,omitempty"`
	CancelsInFlight       int64 `json:"cancelsInFlight,omitempty"`
}

// FromHead converts a head to its stored form.
func FromHead(h payments.Head) PaymentHead {
	r := PaymentHead{
		PSPReference: h.PSPReference, MerchantID: h.MerchantID, SiteID: h.SiteID, Reference: h.Reference,
		Source: string(h.Source), SessionID: h.SessionID, ShopperReference: h.ShopperReference, StoredMethodID: h.StoredMethodID,
		StorePayment: h.StorePaymentMethod, AuthType: h.AuthorisationType, CaptureMode: string(h.CaptureMode),
		PaymentMethod: h.PaymentMethod, RefusalReason: h.RefusalReason, ResultCode: h.Auth.ResultCode,
		AuthNotified: h.Auth.Notified, Expired: h.Auth.Expired, Authorised: h.Authorised, Totals: Totals(h.Totals),
		Seq: h.Seq, BoundTo: h.BoundTo, CreatedAt: h.CreatedAt.UTC(), UpdatedAt: h.UpdatedAt.UTC(), Version: h.Version,
	}
	if h.AmountKnown() {
		a := fromAmount(h.Amount)
		r.Amount = &a
	}
	if !h.AuthorisedAt.IsZero() {
		at := h.AuthorisedAt.UTC()
		r.AuthorisedAt = &at
	}
	r.ExpiryNoticeDone = h.ExpiryNoticeDone
	for _, u := range h.AmountUpdates {
		r.AmountUpdates = append(r.AmountUpdates, AmountUpdate(u))
	}
	return r
}

// ToHead converts a stored head to the domain's.
func (r PaymentHead) ToHead() payments.Head {
	h := payments.Head{
		PSPReference: r.PSPReference, MerchantID: r.MerchantID, SiteID: r.SiteID, Reference: r.Reference,
		Source: payments.Source(r.Source), SessionID: r.SessionID, ShopperReference: r.ShopperReference,
		StoredMethodID: r.StoredMethodID, StorePaymentMethod: r.StorePayment, AuthorisationType: r.AuthType,
		CaptureMode: tenant.CaptureMode(r.CaptureMode), PaymentMethod: r.PaymentMethod, RefusalReason: r.RefusalReason,
		Auth:       payments.Auth{ResultCode: r.ResultCode, Notified: r.AuthNotified, Expired: r.Expired},
		Authorised: r.Authorised, Totals: payments.Totals(r.Totals), Seq: r.Seq, BoundTo: r.BoundTo,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, Version: r.Version,
	}
	if r.Amount != nil {
		h.Amount = r.Amount.toAmount()
	}
	if r.AuthorisedAt != nil {
		h.AuthorisedAt = *r.AuthorisedAt
	}
	h.ExpiryNoticeDone = r.ExpiryNoticeDone
	for _, u := range r.AmountUpdates {
		h.AmountUpdates = append(h.AmountUpdates, payments.AmountUpdate(u))
	}
	return h
}

// Entry is a stored ledger entry.
type Entry struct {
	Format       Format   `json:"format"`
	Ref          string   `json:"ref"`
	Kind         string   `json:"kind"`
	Requested    *Request `json:"requested,omitempty"`
	Answered     *Answer  `json:"answered,omitempty"`
	Notices      []Notice `json:"notices,omitempty"`
	Modification string   `json:"modification,omitempty"`
	MergedInto   string   `json:"mergedInto,omitempty"`
	Covered      bool     `json:"covered,omitempty"`
	Releases     bool     `json:"releases,omitempty"`
	Version      int64    `json:"version"`
}

// Request is a stored operation request.
type Request struct {
	Amount      *Amount    `json:"amount,omitempty"`
	Reference   string     `json:"reference,omitempty"`
	UpstreamKey string     `json:"upstreamKey,omitempty"`
	Account     string     `json:"account,omitempty"`
	Splits      []Split    `json:"splits,omitempty"`
	From        int64      `json:"from,omitempty"`
	LineItems   []LineItem `json:"lineItems,omitempty"`
	At          time.Time  `json:"at"`
}

// Split is a stored split instruction of an operation's call.
type Split struct {
	Kind        int    `json:"kind"`
	Account     string `json:"account,omitempty"`
	Value       int64  `json:"value"`
	Currency    string `json:"currency"`
	Reference   string `json:"reference,omitempty"`
	Description string `json:"description,omitempty"`
}

// LineItem is a stored refund line item.
type LineItem struct {
	ID                 string `json:"id,omitempty"`
	Description        string `json:"description,omitempty"`
	Quantity           int64  `json:"quantity,omitempty"`
	AmountExcludingTax *int64 `json:"amountExcludingTax,omitempty"`
	AmountIncludingTax *int64 `json:"amountIncludingTax,omitempty"`
	TaxAmount          *int64 `json:"taxAmount,omitempty"`
	TaxPercentage      *int64 `json:"taxPercentage,omitempty"`
	ProductURL         string `json:"productUrl,omitempty"`
	ImageURL           string `json:"imageUrl,omitempty"`
	ItemCategory       string `json:"itemCategory,omitempty"`
	SKU                string `json:"sku,omitempty"`
	Brand              string `json:"brand,omitempty"`
	Color              string `json:"color,omitempty"`
	Size               string `json:"size,omitempty"`
	Manufacturer       string `json:"manufacturer,omitempty"`
	UPC                string `json:"upc,omitempty"`
}

// Answer is a stored operation answer.
type Answer struct {
	Outcome string    `json:"outcome"`
	Reason  string    `json:"reason,omitempty"`
	At      time.Time `json:"at"`
}

// Notice is a stored notification of an operation.
type Notice struct {
	Code    string    `json:"code"`
	Success bool      `json:"success"`
	Amount  Amount    `json:"amount"`
	Reason  string    `json:"reason,omitempty"`
	Seq     int64     `json:"seq,omitempty"`
	At      time.Time `json:"at"`
}

// FromEntry converts an entry to its stored form.
func FromEntry(e payments.Entry) Entry {
	r := Entry{Ref: e.Ref, Kind: string(e.Kind), Modification: e.Modification, MergedInto: e.MergedInto, Covered: e.Covered,
		Releases: e.Releases, Version: e.Version}
	if q := e.Requested; q != nil {
		r.Requested = &Request{Reference: q.Reference, UpstreamKey: q.UpstreamKey, Account: q.Account, From: q.From, At: q.At.UTC()}
		for _, s := range q.Splits {
			r.Requested.Splits = append(r.Requested.Splits, Split{Kind: int(s.Kind), Account: s.Account, Value: s.Value,
				Currency: s.Currency, Reference: s.Reference, Description: s.Description})
		}
		if q.Amount.Currency != "" {
			a := fromAmount(q.Amount)
			r.Requested.Amount = &a
		}
		for _, l := range q.LineItems {
			r.Requested.LineItems = append(r.Requested.LineItems, LineItem(l))
		}
	}
	if a := e.Answered; a != nil {
		r.Answered = &Answer{Outcome: string(a.Outcome), Reason: a.Reason, At: a.At.UTC()}
	}
	for _, n := range e.Notices {
		r.Notices = append(r.Notices, Notice{Code: n.Code, Success: n.Success, Amount: fromAmount(n.Amount), Reason: n.Reason,
			Seq: n.Seq, At: n.At.UTC()})
	}
	return r
}

// ToEntry converts a stored entry to the domain's.
func (r Entry) ToEntry() payments.Entry {
	e := payments.Entry{Ref: r.Ref, Kind: payments.OpKind(r.Kind), Modification: r.Modification, MergedInto: r.MergedInto,
		Covered: r.Covered, Releases: r.Releases, Version: r.Version}
	if q := r.Requested; q != nil {
		e.Requested = &payments.Request{Reference: q.Reference, UpstreamKey: q.UpstreamKey, Account: q.Account, From: q.From, At: q.At}
		for _, s := range q.Splits {
			e.Requested.Splits = append(e.Requested.Splits, payments.Split{Kind: payments.SplitKind(s.Kind), Account: s.Account,
				Value: s.Value, Currency: s.Currency, Reference: s.Reference, Description: s.Description})
		}
		if q.Amount != nil {
			e.Requested.Amount = q.Amount.toAmount()
		}
		for _, l := range q.LineItems {
			e.Requested.LineItems = append(e.Requested.LineItems, payments.LineItem(l))
		}
	}
	if a := r.Answered; a != nil {
		e.Answered = &payments.Answer{Outcome: payments.Outcome(a.Outcome), Reason: a.Reason, At: a.At}
	}
	for _, n := range r.Notices {
		e.Notices = append(e.Notices, payments.Notice{Code: n.Code, Success: n.Success, Amount: n.Amount.toAmount(),
			Reason: n.Reason, Seq: n.Seq, At: n.At})
	}
	return e
}

// Fact is a stored timeline fact.
type Fact struct {
	Format       Format    `json:"format"`
	ID           string    `json:"id"`
	At           time.Time `json:"at"`
	Kind         string    `json:"kind"`
	Origin       string    `json:"origin"`
	PSPReference string    `json:"pspReference,omitempty"`
	Amount       *Amount   `json:"amount,omitempty"`
	Success      *bool     `json:"success,omitempty"`
	Detail       string    `json:"detail,omitempty"`
}

// FromFact converts a fact to its stored form.
func FromFact(f payments.Fact) Fact {
	return Fact{ID: f.ID, At: f.At.UTC(), Kind: f.Kind, Origin: f.Origin, PSPReference: f.PSPReference,
		Amount: fromAmountPtr(f.Amount), Success: f.Success, Detail: f.Detail}
}

// ToFact converts a stored fact to the domain's.
func (r Fact) ToFact() payments.Fact {
	return payments.Fact{ID: r.ID, At: r.At, Kind: r.Kind, Origin: r.Origin, PSPReference: r.PSPReference,
		Amount: r.Amount.toAmountPtr(), Success: r.Success, Detail: r.Detail}
}
