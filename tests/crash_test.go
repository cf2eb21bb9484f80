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

// crashRig is a local server (embedded store) whose upstream simulator and
// merchant webhook receiver run in the test, so they outlive a kill.
type crashRig struct {
	t      *testing.T
	addr   string
	base   string
	data   string
	env    []string
	sim    *simulator.Simulator
	client *http.Client

	hookMu      sync.Mutex
	hooks       map[string]int // eventCode + " " + pspReference → deliveries
	hookChanged chan struct{}  // closed (and replaced) at every delivery
}

func newCrashRig(t *testing.T) *crashRig {
	const (
		simAPIKey  = "crash-test-upstream-api-key"
		notifyUser = "upstream"
		notifyPass = "crash-test-notification-password"
	)
	addr := freeAddr(t)
	rig := &crashRig{t: t, addr: addr, base: "http://" + addr, data: t.TempDir(), hooks: map[string]int{},
		hookChanged: make(chan struct{}), client: &http.Client{Timeout: serverWait}}

	// The merchant's webhook receiver: deliveries by event code and pspReference.
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
			rig.hookMu.Lock()
			for _, it := range n.NotificationItems {
				rig.hooks[it.Item.EventCode+" "+it.Item.PSPReference]++
			}
			close(rig.hookChanged)
			rig.hookChanged = make(chan struct{})
			rig.hookMu.Unlock()
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(receiver.Close)

	// The upstream, retrying notifications quickly while the service is
	// down, and for long enough (10 minutes) that no restart, however slow
	// the machine, outlasts the retries.
	backoff := make([]time.Duration, 1200)
	for i := range backoff {
		backoff[i] = 500 * time.Millisecond
	}
	notifier, err := simulator.NewHTTPNotifier(simulator.HTTPNotifierConfig{
		URL: rig.base + httpapi.NotificationsPath, Username: notifyUser, Password: notifyPass, Backoff: backoff,
		Timeout: 5 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	// The seed's merchant takes multiple partial captures: so does its
	// account here.
	rig.sim, err = simulator.New(simulator.Options{APIKey: simAPIKey, HMACKeyHex: sampleHMACKey, Notifier: notifier,
		MultiplePartialCaptureAccounts: []string{"AcmeOutdoorECOM"}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rig.sim.Close() })
	upstreamSrv := httptest.NewServer(rig.sim)
	t.Cleanup(upstreamSrv.Close)

	rig.env = []string{
		"PAYSVC_DATA_DIR=" + rig.data, "PAYSVC_SEED_FILE=" + hookedSeed(t, receiver.URL+"/hooks"), "PAYSVC_WEBHOOK_ALLOW_LOCAL=true",
		"PAYSVC_UPSTREAM_URL=" + upstreamSrv.URL + rig.sim.BasePath(), "PAYSVC_UPSTREAM_API_KEY=" + simAPIKey,
		"PAYSVC_UPSTREAM_HMAC_KEY=" + sampleHMACKey, "PAYSVC_NOTIFICATION_USERNAME=" + notifyUser,
		"PAYSVC_NOTIFICATION_PASSWORD=" + notifyPass,
		"PAYSVC_RATE_PER_SECOND=100000", "PAYSVC_RATE_BURST=100000", // the burst is not what is tested
	}
	return rig
}

// start starts the local server on the rig's address and data.
func (rig *crashRig) start() *localServer { return startLocalAt(rig.t, rig.addr, rig.env...) }

// waitHooked waits until the receiver got a delivery of eventCode for
// every pspReference of psps (by key), failing after serverWait with those
// still missing.
func (rig *crashRig) waitHooked(eventCode string, psps map[string]string, logs func() string) {
	rig.t.Helper()
	bound := time.NewTimer(serverWait)
	defer bound.Stop()
	for {
		var missing []string
		rig.hookMu.Lock()
		for key, psp := range psps {
			if rig.hooks[eventCode+" "+psp] == 0 {
				missing = append(missing, key+" ("+psp+")")
			}
		}
		changed := rig.hookChanged
		rig.hookMu.Unlock()
		if len(missing) == 0 {
			return
		}
		select {
		case <-changed:
		case <-bound.C:
			rig.t.Fatalf("no %s webhook for %d answered payments within %s: %v\n%s", eventCode, len(missing), serverWait, missing, logs())
		}
	}
}

// flush waits until the upstream delivered every notification it holds:
// each was accepted, so applied to its payment (notifications.Receiver.Accept).
func (rig *crashRig) flush() {
	rig.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), serverWait)
	defer cancel()
	if err := rig.sim.Flush(ctx); err != nil {
		rig.t.Fatalf("the upstream's notifications were not all accepted: %v", err)
	}
}

// post sends body to path with Idempotency-Key key.
func (rig *crashRig) post(path, key, body string) (status int, replayed bool, respBody []byte, err error) {
	req, _ := http.NewRequest(http.MethodPost, rig.base+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+seedKey)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := rig.client.Do(req)
	if err != nil {
		return 0, false, nil, err
	}
	defer resp.Body.Close()
	respBody, err = io.ReadAll(resp.Body)
	if err != nil {
		return 0, false, nil, err
	}
	return resp.StatusCode, resp.Header.Get("Idempotent-Replayed") == "true", respBody, nil
}

// get reads path.
func (rig *crashRig) get(path string) (status int, body []byte) {
	req, _ := http.NewRequest(http.MethodGet, rig.base+path, nil)
	req.Header.Set("Authorization", "Bearer "+seedKey)
	resp, err := rig.client.Do(req)
	if err != nil {
		rig.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err = io.ReadAll(resp.Body)
	if err != nil {
		rig.t.Fatalf("GET %s: %v", path, err)
	}
	return resp.StatusCode, body
}

// burstKill kills a local server once a burst's clients have received
// a given number of answers.
type burstKill struct {
	t        *testing.T
	s        *localServer
	after    int64
	answered atomic.Int64
	killed   chan struct{}
}

func newBurstKill(t *testing.T, s *localServer, after int64) *burstKill {
	return &burstKill{t: t, s: s, after: after, killed: make(chan struct{})}
}

// answer counts an answer a client received, killing the server at the
// given number.
func (k *burstKill) answer() {
	if k.answered.Add(1) == k.after {
		close(k.killed)
		if err := k.s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			k.t.Errorf("kill: %v", err)
		}
	}
}

// sendFailed reports a request's transport error: expected once the
// server is killed, a failure before.
func (k *burstKill) sendFailed(what string, err error) {
	select {
	case <-k.killed:
	default:
		k.t.Errorf("%s before the kill: %v", what, err)
	}
}

// wait waits for the burst's clients, then (unless one failed) for the
// killed server to exit.
func (k *burstKill) wait(clients *sync.WaitGroup) {
	clients.Wait()
	if k.t.Failed() {
		k.t.FailNow()
	}
	select {
	case <-k.s.done:
	case <-time.After(serverWait):
		k.t.Fatal("the killed server did not exit")
	}
}

// pay starts a card payment of 19.99 EUR with Idempotency-Key (and
// reference) key.
func (rig *crashRig) pay(key string) (status int, replayed bool, psp string, body []byte, err error) {
	status, replayed, body, err = rig.post("/v1/ecom/site_acme_web/payments", key, cardBody(1999, key, "https://acme.example/return"))
	var out struct {
		PSPReference string `json:"pspReference"`
	}
	_ = json.Unmarshal(body, &out)
	return status, replayed, out.PSPReference, body, err
}

// TestLocalServerKilledDuringPaymentBurst: the local server (embedded
// store) is killed with SIGKILL while eight clients send
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
		workers   = 8
		killAfter = 40 // answered payments before the kill
	)
	rig := newCrashRig(t)
	sim, data, pay := rig.sim, rig.data, rig.pay
	s := rig.start()

	// The burst: each worker sends new keys until the server is gone.
	var (
		mu       sync.Mutex
		sent     []string
		answered = map[string][]byte{} // key -> body of the 200 received
		pspOf    = map[string]string{}
		kill     = newBurstKill(t, s, killAfter)
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
					kill.sendFailed("payment "+key, err)
					return
				}
				if status != http.StatusOK || psp == "" {
					t.Errorf("payment %s: %d %s", key, status, body)
					return
				}
				mu.Lock()
				answered[key], pspOf[key] = body, psp
				mu.Unlock()
				kill.answer()
			}
		})
	}
	kill.wait(&wg)
	t.Logf("killed after %d answered payments; %d keys sent", len(answered), len(sent))

	s2 := rig.start()

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
	rig.waitHooked("AUTHORISATION", pspOf, s2.outText)

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

// TestLocalServerKilledDuringCaptureBurst: the local server is killed with
// SIGKILL while eight clients capture payments in two parts each, then
// started again on the same data. A capture makes the reservation of its
// amount durable before its upstream call, so the kill can fall between a
// reservation and the record's update after the upstream answered. After
// the restart:
//   - every capture whose answer a client received replays that answer;
//   - every capture sent but not answered completes when retried with its
//     key;
//   - the upstream holds exactly one capture per key: none charged twice;
//   - every payment's record, as its merchant reads it, ends with the sum
//     of its captures captured and nothing in flight.
func TestLocalServerKilledDuringCaptureBurst(t *testing.T) {
	const (
		workers   = 8
		nPayments = 40
		killAfter = 30 // answered captures before the kill
	)
	rig := newCrashRig(t)
	s := rig.start()
	psps := make(chan string, nPayments)
	for i := range nPayments {
		status, _, psp, body, err := rig.pay(fmt.Sprintf("auth-%d", i))
		if err != nil || status != http.StatusOK || psp == "" {
			t.Fatalf("payment %d: %d %v %s", i, status, err, body)
		}
		psps <- psp
	}
	close(psps)
	capture := func(psp, key string, value int64) (int, bool, []byte, error) {
		return rig.post("/v1/ecom/site_acme_web/payments/"+psp+"/captures", key,
			fmt.Sprintf(`{"amount":{"value":%d,"currency":"EUR"},"reference":%q}`, value, key))
	}
	type sentCapture struct {
		psp, key string
		value    int64
	}
	var (
		mu       sync.Mutex
		sent     []sentCapture
		answered = map[string][]byte{} // key -> body of the 200 received
		kill     = newBurstKill(t, s, killAfter)
		wg       sync.WaitGroup
	)
	for range workers {
		wg.Go(func() {
			for psp := range psps {
				for i, value := range []int64{1000, 999} {
					c := sentCapture{psp: psp, key: fmt.Sprintf("cap-%s-%d", psp, i), value: value}
					mu.Lock()
					sent = append(sent, c)
					mu.Unlock()
					status, _, body, err := capture(c.psp, c.key, c.value)
					if err != nil {
						kill.sendFailed("capture "+c.key, err)
						return
					}
					if status != http.StatusOK {
						t.Errorf("capture %s: %d %s", c.key, status, body)
						return
					}
					mu.Lock()
					answered[c.key] = body
					mu.Unlock()
					kill.answer()
				}
			}
		})
	}
	kill.wait(&wg)
	t.Logf("killed after %d answered captures; %d sent", len(answered), len(sent))

	s2 := rig.start()
	want := map[string]int64{} // psp -> captured once every sent capture completed
	for _, c := range sent {
		want[c.psp] += c.value
		status, replayed, body, err := capture(c.psp, c.key, c.value)
		if was, ok := answered[c.key]; ok {
			if err != nil || status != http.StatusOK || !replayed || !bytes.Equal(body, was) {
				t.Errorf("retry of answered %s after the crash: %d replayed=%v err=%v\n%s\nwas %s", c.key, status, replayed, err, body, was)
			}
		} else if err != nil || status != http.StatusOK {
			t.Errorf("retry of unanswered %s after the crash: %d %v %s", c.key, status, err, body)
		}
	}

	// One capture per key at the upstream.
	perRef := map[string]int{}
	for _, p := range rig.sim.Payments() {
		for _, m := range p.Modifications {
			if m.Kind == "capture" {
				perRef[m.Reference]++
			}
		}
	}
	for _, c := range sent {
		if perRef[c.key] != 1 {
			t.Errorf("capture %s reached the upstream %d times, want once", c.key, perRef[c.key])
		}
	}

	// The records: each payment's captures captured, none in flight (the
	// upstream's CAPTURE notifications confirm them meanwhile).
	type amount struct {
		Value int64 `json:"value"`
	}
	var view struct {
		CapturedAmount   amount `json:"capturedAmount"`
		CapturesInFlight amount `json:"capturesInFlight"`
	}
	rig.flush()
	// Every notification was applied; a record update the service
	// deferred is applied by its worker meanwhile, which nothing outside
	// the process shows: the records are read again until they agree, only
	// a failure waits out the bound.
	deadline := time.Now().Add(serverWait)
	for psp, captured := range want {
		for {
			status, body := rig.get("/v1/ecom/site_acme_web/payments/" + psp)
			if status != http.StatusOK || json.Unmarshal(body, &view) != nil {
				t.Fatalf("GET payment %s: %d %s", psp, status, body)
			}
			if view.CapturedAmount.Value == captured && view.CapturesInFlight.Value == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("payment %s: captured %d with %d in flight, want %d and none in flight\n%s\n%s",
					psp, view.CapturedAmount.Value, view.CapturesInFlight.Value, captured, body, s2.outText())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}
