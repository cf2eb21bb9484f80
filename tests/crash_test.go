package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/httpapi"
	"github.com/yp/paysvc/shared/store/embedded"
	"github.com/yp/paysvc/shared/upstream/simulator"
)

// TestLocalServerKilledDuringPaymentBurst: the local server (embedded
// store, group commit) is killed with SIGKILL while eight clients send
// payments, then started again on the same data. The upstream simulator
// runs in this test, so it outlives the crash and counts every
// authorisation. After the restart:
//   - every payment whose answer a client received is in the store, and a
//     retry with its Idempotency-Key replays that answer;
//   - its AUTHORISATION webhook reaches the merchant's receiver;
//   - no Idempotency-Key, answered or not, charged twice: the simulator
//     holds at most one payment per key (the reference is the key).
func TestLocalServerKilledDuringPaymentBurst(t *testing.T) {
	const (
		simAPIKey  = "crash-test-upstream-api-key"
		hmacKeyHex = "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056"
		notifyUser = "upstream"
		notifyPass = "crash-test-notification-password"
		workers    = 8
		killAfter  = 40 // answered payments before the kill
	)
	addr := freeAddr(t)
	base := "http://" + addr

	// The merchant's webhook receiver: AUTHORISATION deliveries by pspReference.
	var hookMu sync.Mutex
	hooks := map[string]int{}
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var n struct {
			NotificationItems []struct {
				Item struct {
					EventCode    string `json:"eventCode"`
					PSPReference string `json:"pspReference"`
				} `json:"NotificationRequestItem"`
			} `json:"notificationItems"`
		}
		if json.Unmarshal(b, &n) == nil {
			hookMu.Lock()
			for _, it := range n.NotificationItems {
				if it.Item.EventCode == "AUTHORISATION" {
					hooks[it.Item.PSPReference]++
				}
			}
			hookMu.Unlock()
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()

	// The upstream, retrying notifications quickly while the service is down.
	backoff := make([]time.Duration, 60)
	for i := range backoff {
		backoff[i] = 500 * time.Millisecond
	}
	notifier, err := simulator.NewHTTPNotifier(simulator.HTTPNotifierConfig{
		URL: base + httpapi.NotificationsPath, Username: notifyUser, Password: notifyPass, Backoff: backoff,
		Timeout: 5 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	sim, err := simulator.New(simulator.Options{APIKey: simAPIKey, HMACKeyHex: hmacKeyHex, Notifier: notifier,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	upstreamSrv := httptest.NewServer(sim)
	defer upstreamSrv.Close()

	seed, err := os.ReadFile("../cmd/paysvc-local/seed.example.json")
	if err != nil {
		t.Fatal(err)
	}
	seedFile := filepath.Join(t.TempDir(), "seed.json")
	if err := os.WriteFile(seedFile, bytes.Replace(seed, []byte("http://127.0.0.1:4000/webhooks"), []byte(receiver.URL+"/hooks"), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	env := []string{
		"PAYSVC_DATA_DIR=" + data, "PAYSVC_SEED_FILE=" + seedFile, "PAYSVC_WEBHOOK_ALLOW_LOCAL=true",
		"PAYSVC_UPSTREAM_URL=" + upstreamSrv.URL + sim.BasePath(), "PAYSVC_UPSTREAM_API_KEY=" + simAPIKey,
		"PAYSVC_UPSTREAM_HMAC_KEY=" + hmacKeyHex, "PAYSVC_NOTIFICATION_USERNAME=" + notifyUser,
		"PAYSVC_NOTIFICATION_PASSWORD=" + notifyPass,
		"PAYSVC_RATE_PER_SECOND=100000", "PAYSVC_RATE_BURST=100000", // the burst is not what is tested
	}
	s := startLocalAt(t, addr, env...)

	client := &http.Client{Timeout: 30 * time.Second}
	pay := func(key string) (status int, replayed bool, psp string, body []byte, err error) {
		req, _ := http.NewRequest(http.MethodPost, base+"/v1/ecom/site_acme_web/payments", strings.NewReader(
			`{"amount":{"value":1999,"currency":"EUR"},"reference":"`+key+`","returnUrl":"https://acme.example/return",`+
				`"paymentMethod":{"type":"scheme","encryptedCardNumber":"test_4111111111111111","encryptedExpiryMonth":"test_03",`+
				`"encryptedExpiryYear":"test_2030","encryptedSecurityCode":"test_737"}}`))
		req.Header.Set("Authorization", "Bearer "+seedKey)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		resp, err := client.Do(req)
		if err != nil {
			return 0, false, "", nil, err
		}
		defer resp.Body.Close()
		body, err = io.ReadAll(resp.Body)
		if err != nil {
			return 0, false, "", nil, err
		}
		var out struct {
			PSPReference string `json:"pspReference"`
		}
		_ = json.Unmarshal(body, &out)
		return resp.StatusCode, resp.Header.Get("Idempotent-Replayed") == "true", out.PSPReference, body, nil
	}

	// The burst: each worker sends new keys until the server is gone.
	var (
		mu       sync.Mutex
		sent     []string
		answered = map[string][]byte{} // key -> body of the 200 received
		pspOf    = map[string]string{}
		nAnswer  atomic.Int64
		killed   = make(chan struct{})
		wg       sync.WaitGroup
	)
	for w := range workers {
		wg.Go(func() {
			for i := 0; ; i++ {
				key := fmt.Sprintf("crash-%d-%d", w, i)
				mu.Lock()
				sent = append(sent, key)
				mu.Unlock()
				status, _, psp, body, err := pay(key)
				if err != nil {
					select {
					case <-killed:
						return
					default:
						t.Errorf("payment %s before the kill: %v", key, err)
						return
					}
				}
				if status != http.StatusOK || psp == "" {
					t.Errorf("payment %s: %d %s", key, status, body)
					return
				}
				mu.Lock()
				answered[key], pspOf[key] = body, psp
				mu.Unlock()
				if nAnswer.Add(1) == killAfter {
					close(killed)
					if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
						t.Errorf("kill: %v", err)
					}
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the killed server did not exit")
	}
	t.Logf("killed after %d answered payments; %d keys sent", len(answered), len(sent))

	s2 := startLocalAt(t, addr, env...)

	// Every answered payment: replayed with the same answer after the crash.
	for key, body := range answered {
		status, replayed, _, again, err := pay(key)
		if err != nil || status != http.StatusOK || !replayed || !bytes.Equal(again, body) {
			t.Errorf("retry of answered %s after the crash: %d replayed=%v err=%v\n%s\nwas %s", key, status, replayed, err, again, body)
		}
	}
	// Keys sent but not answered: a retry completes them or finds their
	// lease still held (409); neither charges again.
	for _, key := range sent {
		if _, ok := answered[key]; ok {
			continue
		}
		status, _, _, body, err := pay(key)
		if err != nil || (status != http.StatusOK && status != http.StatusConflict) {
			t.Errorf("retry of unanswered %s after the crash: %d %v %s", key, status, err, body)
		}
	}

	// No key charged twice; every answered key charged once, as answered.
	perRef := map[string][]string{}
	for _, p := range sim.Payments() {
		perRef[p.Reference] = append(perRef[p.Reference], p.PSPReference)
	}
	for ref, psps := range perRef {
		if len(psps) > 1 {
			t.Errorf("key %s charged %d times: %v", ref, len(psps), psps)
		}
	}
	for key, psp := range pspOf {
		if got := perRef[key]; len(got) != 1 || got[0] != psp {
			t.Errorf("answered %s (%s): the upstream holds %v", key, psp, got)
		}
	}

	// Every answered payment's webhook reaches the merchant.
	deadline := time.Now().Add(60 * time.Second)
	for {
		hookMu.Lock()
		var missing []string
		for key, psp := range pspOf {
			if hooks[psp] == 0 {
				missing = append(missing, key+" ("+psp+")")
			}
		}
		hookMu.Unlock()
		if len(missing) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no AUTHORISATION webhook for %d answered payments within 60 s: %v\n%s", len(missing), missing, s2.outText())
		}
		time.Sleep(200 * time.Millisecond)
	}

	// The records themselves, read from the store after a clean stop.
	s2.stop()
	st, err := embedded.Open(filepath.Join(data, "paysvc.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for key, psp := range pspOf {
		p, err := st.GetPayment(context.Background(), psp)
		if err != nil || p.Reference != key || p.MerchantID != "m_acme" {
			t.Errorf("payment record of answered %s (%s): %+v, %v", key, psp, p, err)
		}
	}
}
