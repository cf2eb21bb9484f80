// Command dispatcher is the Lambda function triggered by the SQS deliveries queue: it makes one webhook delivery attempt per message, reports partial batch failures and backs off by message visibility.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/yp/paysvc/shared/app"
)

func main() {
	ctx := context.Background()
	a := app.Lambda(ctx)
	h, err := app.DispatcherHandler(ctx, a)
	if err != nil {
		app.Exit(a.Log, err)
	}
	lambda.Start(h)
}
