package webhooks

import (
	"strconv"
	"strings"
	"time"
)

// Request is one attempt to send.
type Request struct {
	URL       string
	ID        string    // X-Webhook-Id
	Attempt   int       // X-Webhook-Delivery-Attempt
	Timestamp time.Time // X-Webhook-Timestamp (Unix seconds)
	Signature string    // X-Webhook-HMAC-Signature, see Sign
	Body      []byte
}

// Result is what one attempt got.
type Result struct {
	StatusCode int           // the receiver's status; 0 when none came
	Err        error         // why no answer came (refused, timeout, network)
	Timeout    bool          // no complete answer within the timeout
	Refused    bool          // the target broke the SSRF rules
	Duration   time.Duration // from sending to the end of the answer
	Reason     string        // the status code's reason phrase ("Service Unavailable")
	// Body is the start of the answer, at most MaxBodyPrefix bytes;
	// Truncated says there was more.
	Body      []byte
	Truncated bool
}

// Delivered reports a 2xx answer.
func (r Result) Delivered() bool { return r.Err == nil && r.StatusCode >= 200 && r.StatusCode < 300 }

// Gone reports a 410 Gone answer.
func (r Result) Gone() bool { return r.Err == nil && r.StatusCode == statusGone }

// statusGone is HTTP 410 Gone.
const statusGone = 410

// Describe is a short account of a failed attempt for the delivery record
// and logs; it never holds the URL (which may carry a merchant's token).
func (r Result) Describe() string {
	switch {
	case r.Delivered():
		return ""
	case r.Err != nil:
		return r.Err.Error()
	default:
		return "HTTP " + strconv.Itoa(r.StatusCode) + " " + r.Reason
	}
}

// recordOf is the attempt number n made at with signature sig that got res,
// as its delivery keeps it.
func recordOf(n int, at time.Time, sig string, res Result) AttemptRecord {
	body := res.Body
	truncated := res.Truncated
	if len(body) > MaxBodyPrefix {
		body, truncated = body[:MaxBodyPrefix], true
	}
	return AttemptRecord{
		Number: n, At: at, Signature: sig, StatusCode: res.StatusCode, Body: strings.ToValidUTF8(string(body), "\uFFFD"),
		Truncated: truncated, Error: res.Describe(), DurationMS: res.Duration.Milliseconds(),
	}
}

// appendHistory appends r to h, keeping the last MaxHistory.
func appendHistory(h []AttemptRecord, r AttemptRecord) []AttemptRecord {
	h = append(h, r)
	if len(h) > MaxHistory {
		h = append([]AttemptRecord(nil), h[len(h)-MaxHistory:]...)
	}
	return h
}
