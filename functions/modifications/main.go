// Command modifications is the Lambda function serving POST /v1/ecom/{siteId}/payments/{pspReference}/captures, /refunds, /reversals and /amount-updates.
package main

import (
	"context"

	"github.com/yp/paysvc/shared/app"
	"github.com/yp/paysvc/shared/httpapi"
	"github.com/yp/paysvc/shared/lambdaapi"
)

func main() {
	a := app.Lambda(context.Background())
	lambdaapi.Start(httpapi.NewHandler(a.Deps, httpapi.ModificationsRoutes(a.Deps)))
}
