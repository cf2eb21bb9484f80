// Command recordupdates is the Lambda function triggered by the SQS record updates queue: it applies the payment record updates the API functions deferred (partial batch failures, backoff by message visibility).
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/yp/paysvc/shared/app"
)

func main() {
	a := app.Lambda(context.Background())
	h, err := app.RecordUpdatesHandler(a)
	if err != nil {
		app.Exit(a.Log, err)
	}
	lambda.Start(h)
}
