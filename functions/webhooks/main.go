// Command webhooks is the Lambda function serving POST /v1/ecom/webhook-deliveries/{deliveryId}/retry and /v1/ecom/webhooks/test: a merchant's webhook self-service.
package main

import (
	"context"

	"github.com/yp/paysvc/shared/app"
	"github.com/yp/paysvc/shared/httpapi"
	"github.com/yp/paysvc/shared/lambdaapi"
)

func main() {
	ctx := context.Background()
	a := app.Lambda(ctx)
	if err := app.WireWebhookSelfService(ctx, a, nil, nil); err != nil {
		app.Exit(a.Log, err)
	}
	lambdaapi.Start(httpapi.NewHandler(a.Deps, httpapi.WebhooksRoutes(a.Deps)))
}
