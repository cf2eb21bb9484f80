// Command payments is the Lambda function serving POST /v1/ecom/{siteId}/payment-methods, /payments, /payments/details and DELETE /v1/ecom/{siteId}/stored-payment-methods/{id}.
package main

import (
	"context"

	"github.com/yp/paysvc/shared/app"
	"github.com/yp/paysvc/shared/httpapi"
	"github.com/yp/paysvc/shared/lambdaapi"
)

func main() {
	a := app.Lambda(context.Background())
	lambdaapi.Start(httpapi.NewHandler(a.Deps, httpapi.PaymentsRoutes(a.Deps)))
}
