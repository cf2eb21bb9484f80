package tests

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/yp/paysvc/shared/testenv"
)

// browserPath finds the Chromium the browser test drives (.ci/test.sh
// checks it is installed; .ci/run installs it).
func browserPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no Chromium found: install it (Debian/Ubuntu: apt-get update && apt-get install -y chromium)")
	return ""
}

// newBrowser starts a fresh headless Chromium for one test.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(browserPath(t)),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
	}
	// A fresh profile, removed once the browser has exited (Chromium's
	// helper processes may still be writing to it while it shuts down, so
	// t.TempDir's strict removal is not used).
	profile, err := os.MkdirTemp("", "paysvc-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	opts = append(opts, chromedp.UserDataDir(profile))
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	bctx, cancelBrowser := chromedp.NewContext(alloc)
	t.Cleanup(func() {
		_ = chromedp.Cancel(bctx) // closes the browser and waits for it
		cancelBrowser()
		cancelAlloc()
		cancel()
		_ = os.RemoveAll(profile)
	})
	if err := chromedp.Run(bctx); err != nil {
		t.Fatalf("starting Chromium: %v", err)
	}
	return bctx
}

// shop is the merchant's return page.
func shop(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(`<!doctype html><html><body><p id="returned">Back at the shop</p></body></html>`))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// The simulator's shopper pages in a real browser: the 3DS challenge and
// the issuer redirect return the shopper to returnUrl with the result, and
// /payments/details with it completes the payment; the hosted checkout
// page pays its session and returns with sessionId and sessionResult.
func TestBrowserShopperPages(t *testing.T) {
	e := testenv.New(t)
	ret := shop(t)
	bctx := newBrowser(t)
	site := "/v1/ecom/" + testenv.SiteA

	// pay starts a card payment through the service and returns its action.
	pay := func(ref, number, cvc string) map[string]string {
		body := `{"amount":{"value":1000,"currency":"EUR"},"reference":"` + ref + `","returnUrl":"` + ret.URL + `/return?order=` + ref + `",
			"paymentMethod":{"type":"scheme","encryptedCardNumber":"test_` + number + `","encryptedExpiryMonth":"test_03","encryptedExpiryYear":"test_2030","encryptedSecurityCode":"test_` + cvc + `"}}`
		r := e.Do("POST", site+"/payments", "A", body)
		var out struct {
			Action map[string]string `json:"action"`
		}
		if err := json.Unmarshal(r.Body, &out); err != nil || r.Status != 200 || out.Action == nil {
			t.Fatalf("payment %s: %d %s", ref, r.Status, r.Body)
		}
		return out.Action
	}
	// details submits what the browser brought back and returns the result.
	details := func(landed string) map[string]any {
		u, err := url.Parse(landed)
		if err != nil || u.Query().Get("redirectResult") == "" {
			t.Fatalf("landed on %q, want the returnUrl with redirectResult", landed)
		}
		d, _ := json.Marshal(map[string]any{"details": map[string]string{"redirectResult": u.Query().Get("redirectResult")}})
		r := e.Do("POST", site+"/payments/details", "A", string(d))
		if r.Status != 200 {
			t.Fatalf("details: %d %s", r.Status, r.Body)
		}
		return r.JSON(t)
	}

	t.Run("3DS challenge", func(t *testing.T) {
		for _, tc := range []struct {
			password, want string
		}{{"password", "Authorised"}, {"wrong", "Refused"}} {
			action := pay("browser-3ds-"+tc.password, "5454545454545454", "737")
			raw, err := base64.StdEncoding.DecodeString(action["token"])
			if err != nil {
				t.Fatal(err)
			}
			var tok struct {
				AcsURL string `json:"acsURL"`
			}
			if err := json.Unmarshal(raw, &tok); err != nil || tok.AcsURL == "" {
				t.Fatalf("challenge token %s", raw)
			}
			var landed string
			if err := chromedp.Run(bctx,
				chromedp.Navigate(tok.AcsURL),
				chromedp.WaitVisible("#password", chromedp.ByID),
				chromedp.SendKeys("#password", tc.password, chromedp.ByID),
				chromedp.Click("#submit", chromedp.ByID),
				chromedp.WaitVisible("#returned", chromedp.ByID),
				chromedp.Location(&landed),
			); err != nil {
				t.Fatalf("browser: %v", err)
			}
			if !strings.HasPrefix(landed, ret.URL+"/return?") {
				t.Fatalf("landed on %s", landed)
			}
			res := details(landed)
			psp, _ := res["pspReference"].(string)
			if res["resultCode"] != tc.want || psp == "" {
				t.Fatalf("password %q: %v", tc.password, res)
			}
			if st, ok := e.Sim.Payment(psp); !ok || st.ResultCode != tc.want {
				t.Fatalf("simulator: %+v", st)
			}
		}
	})

	t.Run("issuer redirect", func(t *testing.T) {
		action := pay("browser-redirect", "4212345678901237", "737")
		var landed string
		if err := chromedp.Run(bctx,
			chromedp.Navigate(action["url"]),
			chromedp.WaitVisible("#authorise", chromedp.ByID),
			chromedp.Click("#authorise", chromedp.ByID),
			chromedp.WaitVisible("#returned", chromedp.ByID),
			chromedp.Location(&landed),
		); err != nil {
			t.Fatalf("browser: %v", err)
		}
		res := details(landed)
		psp, _ := res["pspReference"].(string)
		if res["resultCode"] != "Authorised" {
			t.Fatalf("details: %v", res)
		}
		// The payment is complete: it can be captured at once.
		if r := e.Do("POST", site+"/payments/"+psp+"/captures", "A", `{"amount":{"value":1000,"currency":"EUR"}}`); r.Status != 200 {
			t.Fatalf("capture after details: %d %s", r.Status, r.Body)
		}
	})

	t.Run("hosted session page", func(t *testing.T) {
		r := e.Do("POST", site+"/sessions", "A", `{"amount":{"value":2500,"currency":"EUR"},"reference":"browser-session","returnUrl":"`+ret.URL+`/return"}`)
		id, _ := r.JSON(t)["id"].(string)
		if r.Status != 201 && r.Status != 200 || id == "" {
			t.Fatalf("session: %d %s", r.Status, r.Body)
		}
		var landed string
		if err := chromedp.Run(bctx,
			chromedp.Navigate(e.Upstream.URL+"/_sim/sessions/"+id+"/hosted"),
			chromedp.WaitVisible("#pay", chromedp.ByID),
			chromedp.SendKeys("#holderName", "Jane Doe", chromedp.ByID),
			chromedp.Click("#pay", chromedp.ByID),
			chromedp.WaitVisible("#returned", chromedp.ByID),
			chromedp.Location(&landed),
		); err != nil {
			t.Fatalf("browser: %v", err)
		}
		u, _ := url.Parse(landed)
		if u.Query().Get("sessionId") != id || u.Query().Get("sessionResult") == "" {
			t.Fatalf("landed on %s", landed)
		}
		st, ok := e.Sim.Session(id)
		if !ok || !st.Completed || len(st.Payments) != 1 {
			t.Fatalf("session state %+v", st)
		}
		if p, _ := e.Sim.Payment(st.Payments[0]); p.ResultCode != "Authorised" || p.Amount.Value != 2500 {
			t.Fatalf("session payment %+v", p)
		}
	})
}
