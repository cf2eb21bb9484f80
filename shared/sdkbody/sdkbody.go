// Package sdkbody keeps the AWS SDK's HTTP requests from losing answers
// that arrived whole.
//
// The SDK (smithy-go) closes a request's body as soon as the response's
// headers are in, and its body, once closed, answers WriteTo with io.EOF.
// net/http, having written a body of known length, reads it once more to
// the end to check that nothing is left — through WriteTo when the body
// has one — and takes that io.EOF for a failed write: it closes the
// connection, under the response the SDK is reading. The SDK then reports
// "deserialization failed … use of closed network connection" on an
// answer the server sent whole (aws-sdk-go-v2 #1825), and retries it: a
// write applied twice, a condition failing on its own earlier write. It
// happens when a request outgrows the transport's 4 KB write buffer (the
// rest of the body goes straight to the socket, so the answer can come
// before that last read) and the response wins the race: rarely, more
// under load. Client hands the transport the body without WriteTo; a
// closed body then reads as io.EOF, which ends the check cleanly.
package sdkbody

import (
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// Client returns c (the SDK's default client when nil) sending request
// bodies as plain readers.
func Client(c aws.HTTPClient) aws.HTTPClient {
	if c == nil {
		c = awshttp.NewBuildableClient()
	}
	return client{c}
}

type client struct{ c aws.HTTPClient }

// Do sends a copy of r whose body offers Read and Close only.
func (c client) Do(r *http.Request) (*http.Response, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return c.c.Do(r)
	}
	plain := new(http.Request)
	*plain = *r
	plain.Body = readCloser{r.Body}
	return c.c.Do(plain)
}

// readCloser hides every method of its body but Read and Close.
type readCloser struct{ io.ReadCloser }
