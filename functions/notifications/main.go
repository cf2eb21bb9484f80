// Command notifications is the Lambda function serving POST /v1/notifications/upstream: the upstream's standard notifications, HMAC-verified, stored, applied to payment records and fanned out as webhook deliveries to the deliveries queue.
package main

import (
	"context"

	"github.com/yp/paysvc/shared/app"
	"github.com/yp/paysvc/shared/lambdaapi"
)

func main() {
	ctx := context.Background()
	a := app.Lambda(ctx)
	h, err := app.NotificationsHandler(ctx, a)
	if err != nil {
		app.Exit(a.Log, err)
	}
	lambdaapi.Start(h)
}
