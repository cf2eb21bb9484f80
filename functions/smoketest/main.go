// Command smoketest is the Lambda function CodeDeploy runs before and after it moves a function's live alias: it invokes the new version with that function's probes and reports the hook Succeeded or Failed (shared/smoketest).
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/yp/paysvc/shared/app"
)

func main() {
	lambda.Start(app.SmokeTest(context.Background()).Handle)
}
