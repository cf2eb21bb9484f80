// Package lambdaapi adapts the service's net/http handlers to API Gateway
// REST (v1) proxy events with aws-lambda-go-api-proxy. It is the only file
// that knows about the proxy library, so it can be swapped.
package lambdaapi

import (
	"context"
	"net/http"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"
)

// Handler turns REST proxy events into requests for h. API Gateway's
// request id becomes the X-Request-Id so logs join up with access logs.
func Handler(h http.Handler) func(context.Context, events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
	adapter := httpadapter.New(h)
	return func(ctx context.Context, req events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
		if id := req.RequestContext.RequestID; id != "" {
			if req.Headers == nil {
				req.Headers = map[string]string{}
			}
			req.Headers["X-Request-Id"] = id
			if req.MultiValueHeaders != nil {
				req.MultiValueHeaders["X-Request-Id"] = []string{id}
			}
		}
		return adapter.ProxyWithContext(ctx, req)
	}
}

// Start runs h as the function's handler until the runtime stops it.
func Start(h http.Handler) { lambda.Start(Handler(h)) }
