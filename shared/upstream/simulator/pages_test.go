package simulator

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/upstream"
)

// get fetches a page without following redirects.
func (e *env) get(t *testing.T, rawURL string) (int, string, string) {
	t.Helper()
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, _ := http.NewRequest("GET", rawURL, nil)
	req.Header.Set("Accept", "text/html")
	resp, err := noFollow.Do(req)
	must(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header.Get("Location")
}

// The shopper pages show what is paid, and the challenge its test password.
func TestPagesShowAmountReferenceAndPassword(t *testing.T) {
	e := newEnv(t)
	challenge := startAction(t, e, "5454545454545454", "")
	raw := actionOf(t, challenge.Action)
	_, body, _ := e.get(t, e.srv.URL+"/_sim/redirect/"+actionIDOf(t, raw))
	for _, want := range []string{`id="amount">25.00 EUR<`, `id="reference">order-1<`, "Test password: <code>password</code>", `id="password"`} {
		if !strings.Contains(body, want) {
			t.Errorf("challenge page lacks %q:\n%s", want, body)
		}
	}
	redirect := startAction(t, e, "4212345678901237", "")
	_, body, _ = e.get(t, actionOf(t, redirect.Action)["url"])
	for _, want := range []string{`id="amount">25.00 EUR<`, `id="reference">order-1<`, `id="authorise"`} {
		if !strings.Contains(body, want) {
			t.Errorf("issuer page lacks %q:\n%s", want, body)
		}
	}
	s := createSession(t, e, func(r *upstream.SessionRequest) { r.Mode = "hosted" })
	_, body, _ = e.get(t, s.URL)
	for _, want := range []string{`id="amount">42.00 EUR<`, `id="reference">sess-ref<`, "<code>password</code>", "5454 5454 5454 5454"} {
		if !strings.Contains(body, want) {
			t.Errorf("hosted page lacks %q:\n%s", want, body)
		}
	}
}

// actionIDOf reads the action id out of a threeDS2 action's token.
func actionIDOf(t *testing.T, a map[string]string) string {
	t.Helper()
	d, err := DetailsFor(mustJSON(t, a), true)
	must(t, err)
	var m map[string]string
	_ = json.Unmarshal(d, &m)
	id, _, ok := decodeActionResult(m["threeDSResult"])
	if !ok || id == "" {
		t.Fatalf("no action id in %v", a)
	}
	return id
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	must(t, err)
	return b
}

// With WebThreeDS2 the hosted page sends a 3-D Secure card through the
// challenge page, as the platform does; the challenge's outcome decides
// the session's.
func TestHostedPageChallengesThreeDSCards(t *testing.T) {
	for _, tc := range []struct {
		password, want string
		completed      bool
	}{{"password", "Authorised", true}, {"wrong", "Refused", false}} {
		t.Run(tc.password, func(t *testing.T) {
			e := newEnv(t, func(o *Options) { o.WebThreeDS2 = true })
			s := createSession(t, e, func(r *upstream.SessionRequest) { r.Mode = "hosted" })
			status, _, loc := e.get(t, s.URL+"?pay=1&cardNumber=5454545454545454")
			if status != http.StatusFound || !strings.HasPrefix(loc, e.srv.URL+"/_sim/redirect/") {
				t.Fatalf("pay: %d %s, want the challenge page", status, loc)
			}
			if st, _ := e.sim.Session(s.ID); st.Completed || len(st.Payments) != 1 {
				t.Fatalf("session before the challenge: %+v", st)
			}
			_, body, _ := e.get(t, loc)
			if !strings.Contains(body, "Test password") || !strings.Contains(body, "42.00 EUR") {
				t.Fatalf("challenge page: %s", body)
			}
			status, _, back := e.get(t, loc+"?result="+tc.password)
			u, err := url.Parse(back)
			if status != http.StatusFound || err != nil || u.Host != "shop.example" || u.Query().Get("sessionId") != s.ID || u.Query().Get("sessionResult") == "" {
				t.Fatalf("after the challenge: %d %s", status, back)
			}
			st, _ := e.sim.Session(s.ID)
			p, _ := e.sim.Payment(st.Payments[0])
			if st.Completed != tc.completed || p.ResultCode != tc.want {
				t.Fatalf("session %+v, payment %s", st, p.ResultCode)
			}
			if status, _, _ := e.get(t, loc+"?result=password"); status != http.StatusConflict {
				t.Fatalf("a second completion: %d", status)
			}
		})
	}
	// Without WebThreeDS2 (the lenient mode) the page pays at once.
	e := newEnv(t)
	s := createSession(t, e, func(r *upstream.SessionRequest) { r.Mode = "hosted" })
	if _, _, loc := e.get(t, s.URL+"?pay=1&cardNumber=5454545454545454"); !strings.HasPrefix(loc, "https://shop.example/") {
		t.Fatalf("lenient hosted page: %s", loc)
	}
}

// The test hooks answer errors in the service API's shape.
func TestHookErrorsHaveTheAPIShape(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		method, path, key, body string
		status                  int
		code                    string
	}{
		{"POST", "/_sim/sessions/CSNOPE/pay", testAPIKey, "", 404, HookNotFound},
		{"POST", "/_sim/sessions/CSNOPE/pay", "", "", 401, HookUnauthorized},
		{"GET", "/_sim/payments/NOPE", testAPIKey, "", 404, HookNotFound},
		{"POST", "/_sim/fail?endpoint=nope", testAPIKey, "", 400, HookInvalidRequest},
		{"GET", "/_sim/nothing-here", testAPIKey, "", 404, HookNotFound},
		{"GET", "/_sim/redirect/unknown", "", "", 404, HookNotFound},
	} {
		status, body, _ := e.raw(t, tc.method, tc.path, tc.key, "", tc.body)
		var got map[string]any
		if err := json.Unmarshal(body, &got); err != nil || status != tc.status || got["errorCode"] != tc.code || got["message"] == "" || len(got) != 2 {
			t.Errorf("%s %s: %d %s, want %d with errorCode %s", tc.method, tc.path, status, body, tc.status, tc.code)
		}
	}
	// The platform's own API keeps the platform's error format.
	if status, body, _ := e.raw(t, "POST", "/v71/payments", "", "", "{}"); status != 401 || !strings.Contains(string(body), `"errorType":"security"`) {
		t.Errorf("API without key: %d %s", status, body)
	}
}

// The test hooks refuse what a web page sends; the shopper pages are
// navigations from a shop and take it.
func TestHooksRefuseWebPages(t *testing.T) {
	e := newEnv(t)
	host := strings.TrimPrefix(e.srv.URL, "http://")
	for _, tc := range []struct {
		name, path string
		header     map[string]string
		status     int
	}{
		{"foreign Origin", "/_sim/offers/expire", map[string]string{"Origin": "http://evil.example"}, 403},
		{"opaque Origin", "/_sim/offers/expire", map[string]string{"Origin": "null"}, 403},
		{"cross-site", "/_sim/offers/expire", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
		{"same-site, another port", "/_sim/offers/expire", map[string]string{"Sec-Fetch-Site": "same-site"}, 403},
		{"form", "/_sim/fail?endpoint=payments&failure=500", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 403},
		{"multipart form", "/_sim/fail?endpoint=payments&failure=500", map[string]string{"Content-Type": "multipart/form-data; boundary=b"}, 403},
		{"text/plain", "/_sim/fail?endpoint=payments&failure=500", map[string]string{"Content-Type": "text/plain;charset=UTF-8"}, 403},
		{"its own Origin", "/_sim/offers/expire", map[string]string{"Origin": "http://" + host, "Sec-Fetch-Site": "same-origin", "Content-Type": "application/json"}, 200},
		{"curl", "/_sim/offers/expire", nil, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", e.srv.URL+tc.path, nil)
			req.Header.Set("X-API-Key", testAPIKey)
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			must(t, err)
			var got map[string]any
			_ = json.NewDecoder(resp.Body).Decode(&got)
			resp.Body.Close()
			if resp.StatusCode != tc.status || tc.status == 403 && got["errorCode"] != HookCrossSite {
				t.Errorf("%d %v, want %d", resp.StatusCode, got, tc.status)
			}
		})
	}
	if e.sim.Requests("payments") != 0 {
		t.Fatal("a refused hook reached the API")
	}
	for path, page := range map[string]bool{
		"/_sim/redirect/A1": true, "/_sim/sessions/CS1/hosted": true,
		"/_sim/sessions/CS1/pay": false, "/_sim/payments/P1": false, "/_sim/fail": false, "/_sim/redirect": false,
	} {
		if ShopperPage(path) != page {
			t.Errorf("ShopperPage(%q) = %v", path, !page)
		}
	}
}

func TestFormatAmount(t *testing.T) {
	for _, tc := range []struct {
		in   money.Amount
		want string
	}{
		{money.Amount{Value: 1000, Currency: "EUR"}, "10.00 EUR"},
		{money.Amount{Value: 5, Currency: "USD"}, "0.05 USD"},
		{money.Amount{Value: 1000, Currency: "JPY"}, "1000 JPY"},
		{money.Amount{Value: 1500, Currency: "KWD"}, "1.500 KWD"},
		{money.Amount{Value: -250, Currency: "GBP"}, "-2.50 GBP"},
	} {
		if got := FormatAmount(tc.in); got != tc.want {
			t.Errorf("FormatAmount(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
