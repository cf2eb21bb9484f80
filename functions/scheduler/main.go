// Command scheduler is the Lambda function an EventBridge Scheduler schedule invokes every minute: one pass of the service's timed jobs (the recovery pass of lost answers, the pre-expiry notices).
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/yp/paysvc/shared/app"
)

func main() {
	ctx := context.Background()
	a := app.Lambda(ctx)
	h, err := app.SchedulerHandler(ctx, a)
	if err != nil {
		app.Exit(a.Log, err)
	}
	lambda.Start(h)
}
