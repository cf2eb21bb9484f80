package httpapi

import (
	"context"
	"net/http"

	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/tenant"
)

// PaymentsAPI is the port to the payment domain used by the route handlers.
type PaymentsAPI interface {
	CreateSession(ctx context.Context, m tenant.Merchant, s tenant.Site, body []byte) (payments.SessionResult, error)
	PaymentMethods(ctx context.Context, m tenant.Merchant, s tenant.Site, body []byte) (payments.PaymentMethodsResult, error)
	StartPayment(ctx context.Context, m tenant.Merchant, s tenant.Site, body []byte) (payments.PaymentResult, error)
	SubmitDetails(ctx context.Context, m tenant.Merchant, s tenant.Site, body []byte) (payments.PaymentResult, error)
	Capture(ctx context.Context, m tenant.Merchant, s tenant.Site, psp string, body []byte) (payments.ModificationResult, error)
	Reverse(ctx context.Context, m tenant.Merchant, s tenant.Site, psp string, body []byte) (payments.ModificationResult, error)
	UpdateAmount(ctx context.Context, m tenant.Merchant, s tenant.Site, psp string, body []byte) (payments.ModificationResult, error)
	Refund(ctx context.Context, m tenant.Merchant, s tenant.Site, psp string, in payments.RefundInput) (payments.ModificationResult, error)
	DeleteStoredMethod(ctx context.Context, m tenant.Merchant, id, shopperReference string) error
}

var _ PaymentsAPI = (*payments.Service)(nil)

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
		Handle: func(ctx context.Context, c *Call) (any, error) {
			return d.Payments.CreateSession(ctx, c.Merchant, c.Site, c.Body)
		},
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
			func(ctx context.Context, c *Call) (any, error) {
				return d.Payments.PaymentMethods(ctx, c.Merchant, c.Site, c.Body)
			}),
		site(http.MethodPost, "/v1/ecom/{siteId}/payments", "payments", tenant.PermPayments,
			func(ctx context.Context, c *Call) (any, error) {
				return d.Payments.StartPayment(ctx, c.Merchant, c.Site, c.Body)
			}),
		site(http.MethodPost, "/v1/ecom/{siteId}/payments/details", "payments-details", tenant.PermDetails,
			func(ctx context.Context, c *Call) (any, error) {
				return d.Payments.SubmitDetails(ctx, c.Merchant, c.Site, c.Body)
			}),
		site(http.MethodDelete, "/v1/ecom/{siteId}/stored-payment-methods/{storedPaymentMethodId}", "stored-payment-methods", tenant.PermStoredMethods,
			func(ctx context.Context, c *Call) (any, error) {
				err := d.Payments.DeleteStoredMethod(ctx, c.Merchant, c.PathValue("storedPaymentMethodId"), c.Req.URL.Query().Get("shopperReference"))
				if err != nil {
					return nil, err
				}
				return deletedResponse{StoredPaymentMethodID: c.PathValue("storedPaymentMethodId"), Status: "deleted"}, nil
			}),
	}
}

type deletedResponse struct {
	StoredPaymentMethodID string `json:"storedPaymentMethodId"`
	Status                string `json:"status"`
}

// ModificationsRoutes is the modifications function's route group (docs/openapi.yaml).
func ModificationsRoutes(d *Deps) []Route {
	mod := func(suffix, name string, perm tenant.Permission,
		op func(ctx context.Context, m tenant.Merchant, s tenant.Site, psp string, body []byte) (payments.ModificationResult, error)) Route {
		return Route{
			Method: http.MethodPost, Pattern: "/v1/ecom/{siteId}/payments/{pspReference}/" + suffix, Name: name, Perm: perm, Site: true,
			Handle: func(ctx context.Context, c *Call) (any, error) {
				return op(ctx, c.Merchant, c.Site, c.PathValue("pspReference"), c.Body)
			},
		}
	}
	return []Route{
		mod("captures", "captures", tenant.PermCaptures, d.Payments.Capture),
		mod("reversals", "reversals", tenant.PermReversals, d.Payments.Reverse),
		mod("amount-updates", "amount-updates", tenant.PermAmountUpdates, d.Payments.UpdateAmount),
		refundRoute(d),
	}
}
