package httpapi

import (
	"context"
	"net/http"

	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/tenant"
)

// refundRoute is POST refunds (docs/openapi.yaml), served by the
// modifications function with the other money movements: the body is
// decoded into a typed input, then the domain runs.
func refundRoute(d *Deps) Route {
	return Route{
		Method: http.MethodPost, Pattern: "/v1/ecom/{siteId}/payments/{pspReference}/refunds", Name: "refunds",
		Perm: tenant.PermRefunds, Site: true,
		Handle: func(ctx context.Context, c *Call) (any, error) {
			in, err := payments.ParseRefund(c.Body)
			if err != nil {
				return nil, err
			}
			return d.Payments.Refund(ctx, c.Merchant, c.Site, c.PathValue("pspReference"), in)
		},
	}
}
