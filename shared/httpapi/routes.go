package httpapi

import (
	"context"
	"net/http"

	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/paymentsapp"
	"github.com/yp/paysvc/shared/tenant"
)

// PaymentsAPI is the port to the payment domain used by the route handlers:
// typed inputs in (decoded by shared/paymentsapp), typed results out.
type PaymentsAPI interface {
	CreateSession(ctx context.Context, c *payments.Call, in payments.SessionInput) (payments.SessionResult, error)
	PaymentMethods(ctx context.Context, c *payments.Call, in payments.PaymentMethodsInput) (payments.PaymentMethodsResult, error)
	StartPayment(ctx context.Context, c *payments.Call, in payments.PaymentInput) (payments.PaymentResult, error)
	SubmitDetails(ctx context.Context, c *payments.Call, in payments.DetailsInput) (payments.PaymentResult, error)
	Capture(ctx context.Context, c *payments.Call, psp string, in payments.CaptureInput) (payments.ModificationResult, error)
	Reverse(ctx context.Context, c *payments.Call, psp string, in payments.ReversalInput) (payments.ModificationResult, error)
	Cancel(ctx context.Context, c *payments.Call, psp string, in payments.ReversalInput) (payments.ModificationResult, error)
	UpdateAmount(ctx context.Context, c *payments.Call, psp string, in payments.AmountUpdateInput) (payments.ModificationResult, error)
	Refund(ctx context.Context, c *payments.Call, psp string, in payments.RefundInput) (payments.ModificationResult, error)
	DeleteStoredMethod(ctx context.Context, c *payments.Call, in payments.DeleteStoredMethodInput) error
}

var _ PaymentsAPI = (*payments.Service)(nil)

// endpoint is a payment route's handler: decode and validate the request
// (shared/paymentsapp), call the domain, encode its result.
func endpoint[In, Out, Resp any](
	decode func(c *Call) (In, error),
	op func(ctx context.Context, c *Call, in In) (Out, error),
	encode func(Out) Resp,
) func(ctx context.Context, c *Call) (any, error) {
	return func(ctx context.Context, c *Call) (any, error) {
		in, err := decode(c)
		if err != nil {
			return nil, err
		}
		out, err := op(ctx, c, in)
		if err != nil {
			return nil, err
		}
		return encode(out), nil
	}
}

// body adapts a body decoder of shared/paymentsapp.
func body[In any](decode func([]byte) (In, error)) func(c *Call) (In, error) {
	return func(c *Call) (In, error) { return decode(c.Body) }
}

// onSite adapts a domain operation on the call's site.
func onSite[In, Out any](op func(context.Context, *payments.Call, In) (Out, error)) func(context.Context, *Call, In) (Out, error) {
	return func(ctx context.Context, c *Call, in In) (Out, error) { return op(ctx, &c.Call, in) }
}

// onPayment adapts a domain operation on the payment named by the path's
// {pspReference}.
func onPayment[In, Out any](op func(context.Context, *payments.Call, string, In) (Out, error)) func(context.Context, *Call, In) (Out, error) {
	return func(ctx context.Context, c *Call, in In) (Out, error) {
		return op(ctx, &c.Call, c.PathValue("pspReference"), in)
	}
}

// configResponse is GET /config's body.
type configResponse struct {
	ClientToken string             `json:"clientToken"`
	Environment tenant.Environment `json:"environment"`
}

// ConfigRoutes is the config function's route group (docs/openapi.yaml).
func ConfigRoutes(d *Deps) []Route {
	return []Route{{
		Method: http.MethodGet, Pattern: "/v1/ecom/config", Name: "config", Perm: tenant.PermConfig,
		Handle: func(_ context.Context, c *Call) (any, error) {
			return configResponse{ClientToken: c.Merchant.ClientKey, Environment: d.Auth.Environment()}, nil
		},
	}}
}

// SessionsRoutes is the sessions function's route group (docs/openapi.yaml).
func SessionsRoutes(d *Deps) []Route {
	return []Route{{
		Method: http.MethodPost, Pattern: "/v1/ecom/{siteId}/sessions", Name: "sessions",
		Perm: tenant.PermSessions, Site: true, Flow: tenant.FlowSessions,
		Handle: endpoint(body(paymentsapp.DecodeSession), onSite(d.Payments.CreateSession), paymentsapp.Session),
	}}
}

// PaymentsRoutes is the payments function's route group (docs/openapi.yaml, and
// the stored-payment-method deletion extension).
func PaymentsRoutes(d *Deps) []Route {
	site := func(method, pattern, name string, perm tenant.Permission, h func(ctx context.Context, c *Call) (any, error)) Route {
		return Route{Method: method, Pattern: pattern, Name: name, Perm: perm, Site: true, Handle: h}
	}
	return []Route{
		site(http.MethodPost, "/v1/ecom/{siteId}/payment-methods", "payment-methods", tenant.PermPaymentMethods,
			endpoint(body(paymentsapp.DecodePaymentMethods), onSite(d.Payments.PaymentMethods), paymentsapp.PaymentMethods)),
		site(http.MethodPost, "/v1/ecom/{siteId}/payments", "payments", tenant.PermPayments,
			endpoint(body(paymentsapp.DecodePayment), onSite(d.Payments.StartPayment), paymentsapp.Payment)),
		site(http.MethodPost, "/v1/ecom/{siteId}/payments/details", "payments-details", tenant.PermDetails,
			endpoint(body(paymentsapp.DecodeDetails), onSite(d.Payments.SubmitDetails), paymentsapp.Payment)),
		site(http.MethodDelete, "/v1/ecom/{siteId}/stored-payment-methods/{storedPaymentMethodId}", "stored-payment-methods", tenant.PermStoredMethods,
			endpoint(
				func(c *Call) (payments.DeleteStoredMethodInput, error) {
					return paymentsapp.DecodeDeleteStoredMethod(c.PathValue("storedPaymentMethodId"), c.Req.URL.Query().Get("shopperReference"))
				},
				func(ctx context.Context, c *Call, in payments.DeleteStoredMethodInput) (payments.DeleteStoredMethodInput, error) {
					return in, d.Payments.DeleteStoredMethod(ctx, &c.Call, in)
				},
				paymentsapp.Deleted)),
	}
}

// ModificationsRoutes is the modifications function's route group (docs/openapi.yaml):
// the money movements after a payment, refunds included.
func ModificationsRoutes(d *Deps) []Route {
	mod := func(suffix, name string, perm tenant.Permission, h func(ctx context.Context, c *Call) (any, error)) Route {
		return Route{
			Method: http.MethodPost, Pattern: "/v1/ecom/{siteId}/payments/{pspReference}/" + suffix, Name: name, Perm: perm, Site: true,
			Handle: h,
		}
	}
	return []Route{
		mod("captures", "captures", tenant.PermCaptures,
			endpoint(body(paymentsapp.DecodeCapture), onPayment(d.Payments.Capture), paymentsapp.Modification)),
		mod("reversals", "reversals", tenant.PermReversals,
			endpoint(body(paymentsapp.DecodeReversal), onPayment(d.Payments.Reverse), paymentsapp.Modification)),
		// A cancel's body is a reversal's: {reference}.
		mod("cancels", "cancels", tenant.PermReversals,
			endpoint(body(paymentsapp.DecodeReversal), onPayment(d.Payments.Cancel), paymentsapp.Modification)),
		mod("amount-updates", "amount-updates", tenant.PermAmountUpdates,
			endpoint(func(c *Call) (payments.AmountUpdateInput, error) {
				return paymentsapp.DecodeAmountUpdate(c.Body, c.PathValue("pspReference"))
			}, onPayment(d.Payments.UpdateAmount), paymentsapp.Modification)),
		mod("refunds", "refunds", tenant.PermRefunds,
			endpoint(body(paymentsapp.DecodeRefund), onPayment(d.Payments.Refund), paymentsapp.Modification)),
	}
}
