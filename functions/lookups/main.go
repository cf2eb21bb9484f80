// Command lookups is the Lambda function serving GET /v1/ecom/{siteId}/payments/{pspReference}, /v1/ecom/events and /v1/ecom/webhook-deliveries: reads only.
package main

import (
	"context"

	"github.com/yp/paysvc/shared/app"
	"github.com/yp/paysvc/shared/httpapi"
	"github.com/yp/paysvc/shared/lambdaapi"
)

func main() {
	a := app.Lambda(context.Background())
	lambdaapi.Start(httpapi.NewHandler(a.Deps, httpapi.LookupsRoutes(a.Deps)))
}
