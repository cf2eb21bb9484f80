package verify_test

import (
	"fmt"
	"net/http"
	"time"

	"github.com/yp/paysvc/shared/webhooks"
	"github.com/yp/paysvc/shared/webhooks/sender"
	"github.com/yp/paysvc/shared/webhooks/verify"
)

// A receiver checks each delivery before acting on it.
func ExampleVerify() {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw5cCuyBpMt2o=" // the subscription's secret
	body := []byte(`{"live":false,"notificationItems":[{"NotificationRequestItem":{"eventCode":"AUTHORISATION","success":"true"}}]}`)
	sent := time.Unix(1767225600, 0)

	// What paysvc sends (here built with its own signer).
	sig, _ := webhooks.Sign([]string{secret}, "msg_example", sent, body)
	headers := sender.Headers(webhooks.Request{ID: "msg_example", Attempt: 1, Timestamp: sent, Signature: sig, Body: body})

	fmt.Println(verify.Verify(secret, headers, body, sent.Add(time.Minute), verify.DefaultTolerance))
	fmt.Println(verify.Verify(secret, headers, append(body, ' '), sent, verify.DefaultTolerance))
	fmt.Println(verify.Verify(secret, http.Header{}, body, sent, verify.DefaultTolerance))
	// Output:
	// <nil>
	// paysvc: no matching v1 webhook signature
	// paysvc: webhook id, timestamp or signature header missing
}
