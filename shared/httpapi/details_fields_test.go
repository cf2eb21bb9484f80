package httpapi_test

import (
	"testing"

	"github.com/yp/paysvc/shared/testenv"
)

// A details call the upstream refuses (nothing waits for these details)
// answers 400 naming the field, not a bare "Invalid payload provided".
func TestDetailsRefusedByUpstreamNamesTheField(t *testing.T) {
	e := testenv.New(t)
	path := "/v1/ecom/" + testenv.SiteA + "/payments/details"
	runErrCases(t, e, []errCase{
		{name: "no open action", method: "POST", path: path, key: "A", body: `{"details":{"threeDSResult":"password"}}`,
			status: 400, code: "yp_2002", field: "details"},
		{name: "unknown paymentData", method: "POST", path: path, key: "A", body: `{"details":{"threeDSResult":"password"},"paymentData":"Ab02b4c0!BQABAgBd"}`,
			status: 400, code: "yp_2002", field: "paymentData"},
	})
	if n := len(e.Upstream.Requests("/payments/details")); n != 2 {
		t.Fatalf("upstream details calls = %d, want 2 (the refusal is the upstream's)", n)
	}
}
