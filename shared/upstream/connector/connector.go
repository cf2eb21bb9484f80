// Package connector is the adapter between the payment domain and the
// checkout platform's wire format: it implements payments.Upstream over the
// typed client (shared/upstream), translating the domain's requests to the
// platform's request types and its answers and errors back, and translates
// the platform's notification items to the domain's and back (for the
// stored events and the merchants' webhooks, which carry the item as sent).
// The domain never sees a wire type.
package connector

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"

	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/upstream"
)

// Client is the typed client the connector calls (*upstream.Client).
type Client interface {
	CreateSession(ctx context.Context, req upstream.SessionRequest, idempotencyKey string) (upstream.SessionResponse, error)
	PaymentMethods(ctx context.Context, req upstream.PaymentMethodsRequest, idempotencyKey string) (upstream.PaymentMethodsResponse, error)
	Payments(ctx context.Context, req upstream.PaymentRequest, idempotencyKey string) (upstream.PaymentResponse, error)
	PaymentDetails(ctx context.Context, req upstream.DetailsRequest, idempotencyKey string) (upstream.PaymentResponse, error)
	Capture(ctx context.Context, pspReference string, req upstream.CaptureRequest, idempotencyKey string) (upstream.ModificationResponse, error)
	Reverse(ctx context.Context, pspReference string, req upstream.ReversalRequest, idempotencyKey string) (upstream.ModificationResponse, error)
	Cancel(ctx context.Context, pspReference string, req upstream.CancelRequest, idempotencyKey string) (upstream.ModificationResponse, error)
	UpdateAmount(ctx context.Context, pspReference string, req upstream.AmountUpdateRequest, idempotencyKey string) (upstream.ModificationResponse, error)
	Refund(ctx context.Context, pspReference string, req upstream.RefundRequest, idempotencyKey string) (upstream.ModificationResponse, error)
	DeleteStoredPaymentMethod(ctx context.Context, req upstream.DeleteStoredPaymentMethodRequest) error
}

var _ Client = (*upstream.Client)(nil)

// Connector implements payments.Upstream over a Client.
type Connector struct{ c Client }

var _ payments.Upstream = (*Connector)(nil)

// New returns a Connector calling c.
func New(c Client) *Connector { return &Connector{c: c} }

// CreateSession implements payments.Upstream.
func (k *Connector) CreateSession(ctx context.Context, r payments.SessionRequest) (payments.SessionAnswer, error) {
	req := upstream.SessionRequest{
		MerchantAccount: r.MerchantAccount, Amount: r.Amount, Reference: r.Reference, ReturnURL: r.ReturnURL,
		CountryCode: r.CountryCode, ShopperInteraction: r.ShopperInteraction, BlockedPaymentMethods: r.BlockedPaymentMethods,
		Splits: splits(r.Splits), Metadata: r.Metadata, LineItems: lineItems(r.LineItems), ShopperReference: r.ShopperReference,
		ShopperEmail: r.ShopperEmail, TelephoneNumber: r.TelephoneNumber, ShopperLocale: r.ShopperLocale,
		StorePaymentMethodMode: r.StorePaymentMethodMode, RecurringProcessingModel: r.RecurringProcessingModel, Mode: r.Mode,
	}
	req.AdditionalData, req.CaptureDelayHours = captureMode(r.CaptureMode, nil)
	if n := r.ShopperName; n != nil {
		req.ShopperName = &upstream.Name{FirstName: n.FirstName, LastName: n.LastName}
	}
	if r.StorePaymentMethod {
		t := true
		req.StorePaymentMethod = &t
	}
	resp, err := k.c.CreateSession(ctx, req, r.IdempotencyKey)
	if err != nil {
		return payments.SessionAnswer{}, domainError(err)
	}
	return payments.SessionAnswer{ID: resp.ID, SessionData: resp.SessionData, ExpiresAt: resp.ExpiresAt, URL: resp.URL}, nil
}

// PaymentMethods implements payments.Upstream.
func (k *Connector) PaymentMethods(ctx context.Context, r payments.PaymentMethodsRequest) (payments.PaymentMethodsResult, error) {
	amount := r.Amount
	resp, err := k.c.PaymentMethods(ctx, upstream.PaymentMethodsRequest{
		MerchantAccount: r.MerchantAccount, Amount: &amount, CountryCode: r.CountryCode, ShopperLocale: r.ShopperLocale,
		Channel: r.Channel, ShopperReference: r.ShopperReference,
		AllowedPaymentMethods: r.AllowedPaymentMethods, BlockedPaymentMethods: r.BlockedPaymentMethods,
	}, r.IdempotencyKey)
	if err != nil {
		return payments.PaymentMethodsResult{}, domainError(err)
	}
	return payments.PaymentMethodsResult{PaymentMethods: resp.PaymentMethods, StoredPaymentMethods: resp.StoredPaymentMethods}, nil
}

// Pay implements payments.Upstream.
func (k *Connector) Pay(ctx context.Context, r payments.PaymentRequest) (payments.PaymentAnswer, error) {
	req := upstream.PaymentRequest{
		MerchantAccount: r.MerchantAccount, Amount: r.Amount, Reference: r.Reference, ReturnURL: r.ReturnURL,
		CountryCode: r.CountryCode, ShopperInteraction: r.ShopperInteraction, RecurringProcessingModel: r.RecurringProcessingModel,
		IndustryUsage: r.IndustryUsage, ShopperReference: r.ShopperReference, Splits: splits(r.Splits),
		Metadata: r.Metadata, PaymentMethod: r.PaymentMethod, Extra: r.StateData,
	}
	req.AdditionalData, req.CaptureDelayHours = captureMode(r.CaptureMode, r.AdditionalData)
	resp, err := k.c.Payments(ctx, req, r.IdempotencyKey)
	return paymentAnswer(resp, err)
}

// captureMode states the merchant's capture mode, so that the platform
// account's default cannot decide it: manual capture is
// additionalData.manualCapture "true" (v71 AdditionalDataCommon, added to
// the merchant's additionalData, which never holds the key), automatic
// capture captureDelayHours 0 (v71 PaymentRequest.captureDelayHours). The
// ledger counts anything but auto as manual (payments.Head.authContribution).
func captureMode(mode tenant.CaptureMode, additional map[string]string) (map[string]string, *int) {
	if mode == tenant.CaptureAuto {
		zero := 0
		return additional, &zero
	}
	out := make(map[string]string, len(additional)+1)
	maps.Copy(out, additional)
	out[upstream.AdditionalManualCapture] = "true"
	return out, nil
}

// Details implements payments.Upstream.
func (k *Connector) Details(ctx context.Context, r payments.DetailsRequest) (payments.PaymentAnswer, error) {
	resp, err := k.c.PaymentDetails(ctx, upstream.DetailsRequest{Details: r.Details, PaymentData: r.PaymentData}, r.IdempotencyKey)
	return paymentAnswer(resp, err)
}

func paymentAnswer(resp upstream.PaymentResponse, err error) (payments.PaymentAnswer, error) {
	if err != nil {
		return payments.PaymentAnswer{}, domainError(err)
	}
	a := payments.PaymentAnswer{
		ResultCode: resp.ResultCode, PSPReference: resp.PSPReference, Action: resp.Action,
		RefusalReason: resp.RefusalReason, RefusalReasonCode: resp.RefusalReasonCode,
		MerchantReference: resp.MerchantReference, Amount: resp.Amount, ActionPaymentData: actionPaymentData(resp.Action),
	}
	if pm := resp.PaymentMethod; pm != nil && pm.Type != "" {
		a.PaymentMethod = pm.Brand
		if a.PaymentMethod == "" {
			a.PaymentMethod = pm.Type
		}
	}
	return a, nil
}

// actionPaymentData returns the paymentData of an action ("" for none).
func actionPaymentData(action json.RawMessage) string {
	var a struct {
		PaymentData string `json:"paymentData"`
	}
	if len(action) == 0 || json.Unmarshal(action, &a) != nil {
		return ""
	}
	return a.PaymentData
}

// Modify implements payments.Upstream.
func (k *Connector) Modify(ctx context.Context, r payments.ModificationRequest) (payments.ModificationAnswer, error) {
	var resp upstream.ModificationResponse
	var err error
	switch r.Kind {
	case payments.OpCapture:
		resp, err = k.c.Capture(ctx, r.PSPReference, upstream.CaptureRequest{
			MerchantAccount: r.MerchantAccount, Amount: r.Amount, Reference: r.Reference, Splits: splits(r.Splits),
			LineItems: lineItems(r.LineItems),
		}, r.IdempotencyKey)
	case payments.OpRefund:
		resp, err = k.c.Refund(ctx, r.PSPReference, upstream.RefundRequest{
			MerchantAccount: r.MerchantAccount, Amount: r.Amount, Reference: r.Reference, Splits: splits(r.Splits),
			LineItems: lineItems(r.LineItems),
		}, r.IdempotencyKey)
	case payments.OpReversal:
		resp, err = k.c.Reverse(ctx, r.PSPReference, upstream.ReversalRequest{
			MerchantAccount: r.MerchantAccount, Reference: r.Reference,
		}, r.IdempotencyKey)
	case payments.OpCancel:
		resp, err = k.c.Cancel(ctx, r.PSPReference, upstream.CancelRequest{
			MerchantAccount: r.MerchantAccount, Reference: r.Reference,
		}, r.IdempotencyKey)
	case payments.OpAmountUpdate:
		resp, err = k.c.UpdateAmount(ctx, r.PSPReference, upstream.AmountUpdateRequest{
			MerchantAccount: r.MerchantAccount, Amount: r.Amount, Reference: r.Reference, Splits: splits(r.Splits),
		}, r.IdempotencyKey)
	default:
		return payments.ModificationAnswer{}, fmt.Errorf("connector: unknown modification kind %q", r.Kind)
	}
	if err != nil {
		return payments.ModificationAnswer{}, domainError(err)
	}
	return payments.ModificationAnswer{PSPReference: resp.PSPReference, Status: resp.Status, Reference: resp.Reference}, nil
}

// DeleteStoredMethod implements payments.Upstream.
func (k *Connector) DeleteStoredMethod(ctx context.Context, r payments.DeleteStoredMethodRequest) error {
	err := k.c.DeleteStoredPaymentMethod(ctx, upstream.DeleteStoredPaymentMethodRequest{
		StoredPaymentMethodID: r.StoredPaymentMethodID, MerchantAccount: r.MerchantAccount, ShopperReference: r.ShopperReference,
	})
	if err != nil {
		return domainError(err)
	}
	return nil
}

// domainError classifies a client error for the domain: an in-flight
// duplicate, a deterministic rejection (with the platform's message), or
// anything else unchanged (no definitive answer).
func domainError(err error) error {
	if upstream.IsInFlight(err) {
		return fmt.Errorf("%w: %w", payments.ErrUpstreamInFlight, err)
	}
	if e, ok := upstream.AsError(err); ok && e.Rejected() {
		return &payments.UpstreamRejection{Message: e.Message, NotFound: e.NotFound(), Err: err}
	}
	return err
}

// splits translates the domain's splits (one allocation for all of them).
func splits(in []payments.Split) []upstream.Split {
	if len(in) == 0 {
		return nil
	}
	buf := make([]struct {
		split  upstream.Split
		amount upstream.SplitAmount
	}, len(in))
	out := make([]upstream.Split, len(in))
	for i, s := range in {
		buf[i].amount = upstream.SplitAmount{Value: s.Value, Currency: s.Currency}
		typ := upstream.SplitBalanceAccount
		if s.Kind == payments.SplitCommission {
			typ = upstream.SplitCommission
		}
		out[i] = upstream.Split{Type: typ, Account: s.Account, Amount: &buf[i].amount, Reference: s.Reference, Description: s.Description}
	}
	return out
}

// lineItems translates the domain's line items.
func lineItems(in []payments.LineItem) []upstream.LineItem {
	if in == nil {
		return nil
	}
	out := make([]upstream.LineItem, len(in))
	for i, l := range in {
		out[i] = upstream.LineItem(l)
	}
	return out
}

// Notification translates a wire notification item to the domain's.
func Notification(it upstream.NotificationRequestItem) payments.Notification {
	return payments.Notification{
		EventCode: it.EventCode, PSPReference: it.PSPReference, OriginalReference: it.OriginalReference, OriginalPSP: it.OriginalPSP,
		MerchantAccountCode: it.MerchantAccountCode, MerchantReference: it.MerchantReference, Amount: it.Amount,
		EventDate: it.EventDate, PaymentMethod: it.PaymentMethod, Reason: it.Reason, Success: it.Success,
		Operations: it.Operations, AdditionalData: it.AdditionalData,
	}
}

// Item translates a domain notification back to the wire item (exactly
// the item Notification was given).
func Item(n payments.Notification) upstream.NotificationRequestItem {
	return upstream.NotificationRequestItem{
		EventCode: n.EventCode, PSPReference: n.PSPReference, OriginalReference: n.OriginalReference, OriginalPSP: n.OriginalPSP,
		MerchantAccountCode: n.MerchantAccountCode, MerchantReference: n.MerchantReference, Amount: n.Amount,
		EventDate: n.EventDate, PaymentMethod: n.PaymentMethod, Reason: n.Reason, Success: n.Success,
		Operations: n.Operations, AdditionalData: n.AdditionalData,
	}
}
