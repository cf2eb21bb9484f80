package localserver

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// pay3DS starts a payment with a 3-D Secure card and returns its answer.
func pay3DS(t *testing.T, s *server, key, ref string) map[string]any {
	t.Helper()
	status, out := s.do(t, "POST", "/v1/ecom/site_demo/payments", map[string]string{"Authorization": "Bearer " + key, "Content-Type": "application/json"},
		`{"amount":{"value":1000,"currency":"EUR"},"reference":"`+ref+`","returnUrl":"https://shop.example/return",
		"paymentMethod":{"type":"scheme","encryptedCardNumber":"test_5454545454545454","encryptedExpiryMonth":"test_03","encryptedExpiryYear":"test_2030","encryptedSecurityCode":"test_737"}}`)
	if status != 200 {
		t.Fatalf("payment: %d %v", status, out)
	}
	return out
}

// make run's simulator answers as the platform does; PAYSVC_SIM_LENIENT
// switches to the lenient answers.
func TestSimulatorIsPlatformLikeUnlessLenient(t *testing.T) {
	s := start(t, nil)
	out := pay3DS(t, s, s.demoKey(t), "order-platform")
	action, _ := out["action"].(map[string]any)
	if out["resultCode"] != "RedirectShopper" || out["pspReference"] != nil || action["type"] != "redirect" {
		t.Fatalf("platform-like answer: %v", out)
	}
	if !strings.Contains(s.banner.String(), "platform-like") {
		t.Errorf("banner does not say platform-like:\n%s", s.banner.String())
	}
	lenient := start(t, map[string]string{"PAYSVC_SIM_LENIENT": "true"})
	out = pay3DS(t, lenient, lenient.demoKey(t), "order-lenient")
	if out["resultCode"] != "ChallengeShopper" || out["pspReference"] == nil {
		t.Fatalf("lenient answer: %v", out)
	}
	if !strings.Contains(lenient.banner.String(), "lenient (PAYSVC_SIM_LENIENT=true") {
		t.Errorf("banner does not say lenient:\n%s", lenient.banner.String())
	}
}

// The simulator's links are on the service's port and survive a restart,
// with its state: a 3-D Secure page opened before the restart is completed
// after it, and its details authorise the payment.
func TestSimulatorLinksAndStateSurviveARestart(t *testing.T) {
	env := map[string]string{"PAYSVC_ADDR": freeAddr(t), "PAYSVC_DATA_DIR": t.TempDir()}
	s := start(t, env)
	key := s.demoKey(t)
	out := pay3DS(t, s, key, "order-restart")
	link, _ := out["action"].(map[string]any)["url"].(string)
	if !strings.HasPrefix(link, s.base+"/_sim/redirect/") {
		t.Fatalf("the action's link %q is not on the service's port %s", link, s.base)
	}
	s.stop()

	s = start(t, env)
	req, _ := http.NewRequest("GET", link, nil)
	req.Header.Set("Accept", "text/html")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(page), "10.00 EUR") || !strings.Contains(string(page), "order-restart") || !strings.Contains(string(page), "<code>password</code>") {
		t.Fatalf("the 3-D Secure page after the restart: %d\n%s", resp.StatusCode, page)
	}
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err = noFollow.Get(link + "?result=password")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	back, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || resp.StatusCode != http.StatusFound || back.Query().Get("redirectResult") == "" {
		t.Fatalf("completing the page: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	details, _ := json.Marshal(map[string]any{"details": map[string]string{"redirectResult": back.Query().Get("redirectResult")}, "reference": "order-restart"})
	status, res := s.do(t, "POST", "/v1/ecom/site_demo/payments/details", map[string]string{"Authorization": "Bearer " + key, "Content-Type": "application/json"}, string(details))
	if status != 200 || res["resultCode"] != "Authorised" || res["pspReference"] == nil {
		t.Fatalf("details after the restart: %d %v", status, res)
	}
}
