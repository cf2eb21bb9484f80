// Package webhooksapp decodes the requests of merchants' webhook
// self-service (docs/openapi.yaml): retrying a delivery and sending a test
// event. The answers are shared/lookup's views and webhooks.TestReport.
package webhooksapp

import (
	"github.com/yp/paysvc/shared/jsonin"
)

// DecodeRetry accepts the body of POST webhook-deliveries/{id}/retry: none,
// or an empty JSON object.
func DecodeRetry(body []byte) error {
	if len(body) == 0 {
		return nil
	}
	var errs jsonin.Errors
	if o := jsonin.Parse(body, &errs); o != nil {
		o.Done()
	}
	return errs.Err()
}

// DecodeTest reads POST webhooks/test's {subscriptionId?}; an empty body
// (or none given) means every enabled subscription.
func DecodeTest(body []byte) (subscriptionID string, err error) {
	if len(body) == 0 {
		return "", nil
	}
	var errs jsonin.Errors
	o := jsonin.Parse(body, &errs)
	if o == nil {
		return "", errs.Err()
	}
	sub, _ := o.String("subscriptionId", false, jsonin.MaxLen(64), jsonin.NotEmpty, jsonin.Identifier)
	o.Done()
	return sub, errs.Err()
}
