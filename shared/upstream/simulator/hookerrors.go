package simulator

import (
	"cmp"
	"errors"
	"fmt"
	"html"
	"math"
	"net/http"
	"strings"

	"github.com/yp/paysvc/shared/money"
)

// Error codes of the test hooks (/_sim/…). The hooks are not the
// platform's API: their errors have the service API's shape,
// {"errorCode": "...", "message": "..."}, with codes of their own.
const (
	HookInvalidRequest  = "sim_invalid_request"  // 400: a malformed body or query
	HookUnauthorized    = "sim_unauthorized"     // 401: X-API-Key missing or wrong
	HookCrossSite       = "sim_cross_site"       // 403: sent as a web page sends (another origin or site, a form)
	HookNotFound        = "sim_not_found"        // 404: unknown session, payment, action or hook
	HookConflict        = "sim_conflict"         // 409: already paid, not pending, already completed
	HookExpired         = "sim_expired"          // 410: the session expired
	HookUpstreamFailure = "sim_upstream_failure" // 502: a fault-injection card or holder name
	HookTimeout         = "sim_timeout"          // 504: Flush did not finish
	HookInternal        = "sim_internal"         // 500
)

// hookErrorBody is a test hook's error answer.
type hookErrorBody struct {
	ErrorCode string `json:"errorCode"`
	Message   string `json:"message"`
}

// hookCodes are the errorCodes of the hooks' error statuses; any other
// is HookInternal.
var hookCodes = map[int]string{
	http.StatusBadRequest: HookInvalidRequest, http.StatusUnauthorized: HookUnauthorized,
	http.StatusForbidden: HookCrossSite, http.StatusNotFound: HookNotFound, http.StatusConflict: HookConflict,
	http.StatusGone: HookExpired, http.StatusBadGateway: HookUpstreamFailure, http.StatusGatewayTimeout: HookTimeout,
}

// hookCode is the errorCode of a hook's error status.
func hookCode(status int) string { return cmp.Or(hookCodes[status], HookInternal) }

func hookError(status int, err error) result {
	return jsonResult(status, hookErrorBody{ErrorCode: hookCode(status), Message: err.Error()})
}

var errHookKey = errors.New("simulator: test hooks need the simulator's X-API-Key (the local server adds it on its own port)")

// pageError answers a shopper page's failure: an HTML page for a browser,
// else the hooks' JSON error.
func pageError(w http.ResponseWriter, r *http.Request, status int, err error) {
	if !strings.Contains(r.Header.Get("Accept"), "text/html") {
		writeResult(w, hookError(status, err))
		return
	}
	page(w, status, "Simulated checkout: "+http.StatusText(status),
		fmt.Sprintf(`<p class="error" id="error">%s</p><p>errorCode <code>%s</code></p>`,
			html.EscapeString(err.Error()), hookCode(status)))
}

// zeroDecimal and threeDecimal are the ISO 4217 currencies whose minor
// unit is not a hundredth.
var (
	zeroDecimal  = "BIF CLP DJF GNF ISK JPY KMF KRW PYG RWF UGX UYI VND VUV XAF XOF XPF"
	threeDecimal = "BHD IQD JOD KWD LYD OMR TND"
)

// FormatAmount writes an amount in minor units for people: "10.00 EUR",
// "1000 JPY", "1.500 KWD".
func FormatAmount(a money.Amount) string {
	decimals := 2
	switch {
	case strings.Contains(zeroDecimal, a.Currency) && len(a.Currency) == 3:
		decimals = 0
	case strings.Contains(threeDecimal, a.Currency) && len(a.Currency) == 3:
		decimals = 3
	}
	v := a.Value
	sign := ""
	if v < 0 {
		sign, v = "-", -v
	}
	if decimals == 0 {
		return fmt.Sprintf("%s%d %s", sign, v, a.Currency)
	}
	unit := int64(math.Pow10(decimals))
	return fmt.Sprintf("%s%d.%0*d %s", sign, v/unit, decimals, v%unit, a.Currency)
}
