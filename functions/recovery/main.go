// Command recovery is the Lambda function the schedule invokes every minute: a recovery pass repeats the calls of operations whose answer was lost and records their answers.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/yp/paysvc/shared/app"
)

func main() {
	a := app.Lambda(context.Background())
	h, err := app.RecoveryHandler(a)
	if err != nil {
		app.Exit(a.Log, err)
	}
	lambda.Start(h)
}
