// Command config is the Lambda function serving GET /v1/ecom/config.
package main

import (
	"context"

	"github.com/yp/paysvc/shared/app"
	"github.com/yp/paysvc/shared/httpapi"
	"github.com/yp/paysvc/shared/lambdaapi"
)

func main() {
	a := app.Lambda(context.Background())
	lambdaapi.Start(httpapi.NewHandler(a.Deps, httpapi.ConfigRoutes(a.Deps)))
}
