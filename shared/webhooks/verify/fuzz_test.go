package verify_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/webhooks"
	"github.com/yp/paysvc/shared/webhooks/verify"
)

// FuzzVerify feeds Verify arbitrary ids, timestamps, signature headers and
// bodies. It never panics, and it accepts a delivery only when one of the
// header's signatures is the service's own signature of exactly that id,
// timestamp and body, within the tolerance.
func FuzzVerify(f *testing.F) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw5cCuyBpMt2o="
	now := time.Unix(1767225600, 0)
	body := `{"live":false,"notificationItems":[]}`
	sig, err := webhooks.Sign([]string{secret}, "msg_1", now, []byte(body))
	if err != nil {
		f.Fatal(err)
	}
	f.Add("msg_1", strconv.FormatInt(now.Unix(), 10), sig, body)
	f.Add("msg_1", strconv.FormatInt(now.Unix(), 10), "v1,AAAA "+sig, body)
	f.Add("msg_1", "1767225600", "v2,"+strings.TrimPrefix(sig, "v1,"), body)
	f.Add("", "", "", "")
	f.Fuzz(func(t *testing.T, id, ts, sigHeader, body string) {
		h := http.Header{}
		h.Set("webhook-id", id)
		h.Set("webhook-timestamp", ts)
		h.Set("webhook-signature", sigHeader)
		if verify.Verify(secret, h, []byte(body), now, 5*time.Minute) != nil {
			return
		}
		sec, err := strconv.ParseInt(ts, 10, 64)
		if err != nil {
			t.Fatalf("accepted a non-numeric timestamp %q", ts)
		}
		at := time.Unix(sec, 0)
		if d := now.Sub(at); d > 5*time.Minute || d < -5*time.Minute {
			t.Fatalf("accepted a timestamp %s away", d)
		}
		want, err := webhooks.Sign([]string{secret}, id, at, []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range strings.Fields(sigHeader) {
			if s == want {
				return
			}
		}
		t.Fatalf("accepted %q: none of its signatures is %q", sigHeader, want)
	})
}
