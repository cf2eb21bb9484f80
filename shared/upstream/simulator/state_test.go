package simulator

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// With Options.StateFile, what a shopper's link or a later request refers
// to survives a restart: sessions, open challenges (their pages and their
// details), stored cards, Idempotency-Keys and the moved clock.
func TestStateSurvivesARestart(t *testing.T) {
	file := filepath.Join(t.TempDir(), "simulator.json")
	ctx := context.Background()
	e1 := newEnv(t, func(o *Options) { o.StateFile = file })
	sess := createSession(t, e1, nil)
	challenge := startAction(t, e1, "5454545454545454", "")
	req := paymentReq(700, cardMethod("4111111111111111", "737", ""))
	req.ShopperReference, req.RecurringProcessingModel = "shopper-1", "CardOnFile"
	req.Extra = map[string]json.RawMessage{"storePaymentMethod": json.RawMessage("true")}
	first, err := e1.client.Payments(ctx, req, "order-k1")
	must(t, err)
	if _, err := e1.sim.AdvanceClock(30 * time.Minute); err != nil {
		t.Fatal(err)
	}
	e1.srv.Close()
	e1.sim.Close()
	if info, err := os.Stat(file); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("state file: %v %v", info, err)
	}

	e2 := newEnv(t, func(o *Options) { o.StateFile = file; o.Rand = rand.NewChaCha8([32]byte{9}) })
	if got := e2.sim.ClockOffset(); got != 30*time.Minute || !e2.sim.Now().Equal(testStart.Add(30*time.Minute)) {
		t.Fatalf("clock offset %s, now %s", got, e2.sim.Now())
	}
	if st, ok := e2.sim.Session(sess.ID); !ok || st.Completed || !st.ExpiresAt.Equal(sess.ExpiresAt) {
		t.Fatalf("session after restart: %+v %v", st, ok)
	}
	// The challenge's page still answers, and its details complete it.
	raw, _ := base64.StdEncoding.DecodeString(actionOf(t, challenge.Action)["token"])
	var tok challengeToken
	must(t, json.Unmarshal(raw, &tok))
	page := e2.srv.URL + "/_sim/redirect/" + tok.ThreeDSServerTransID
	resp, err := http.Get(page)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("challenge page after restart: %v %v", resp, err)
	}
	resp.Body.Close()
	if d := e2.details(t, challenge.Action, true); d.ResultCode != "Authorised" || d.PSPReference != challenge.PSPReference {
		t.Fatalf("details after restart: %+v", d)
	}
	// The key replays the first answer; no second payment is made.
	count := e2.sim.PaymentCount()
	again, err := e2.client.Payments(ctx, req, "order-k1")
	if err != nil || again.PSPReference != first.PSPReference || e2.sim.PaymentCount() != count {
		t.Fatalf("replay after restart: %+v %v (payments %d, were %d)", again, err, e2.sim.PaymentCount(), count)
	}
	if got := e2.sim.StoredPaymentMethods(testMerchant, "shopper-1"); len(got) != 1 {
		t.Fatalf("stored cards after restart: %+v", got)
	}
	if res, err := e2.sim.PaySession(ctx, sess.ID, SessionPayment{}); err != nil || res.ResultCode != "Authorised" {
		t.Fatalf("paying the session after restart: %+v %v", res, err)
	}
	if _, err := e2.sim.AdvanceClock(-time.Second); err == nil {
		t.Fatal("the clock moved back")
	}
}

func TestStateFileProblemsAreNamed(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"garbage":     "{not json",
		"new version": `{"version":99}`,
	} {
		file := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".json")
		must(t, os.WriteFile(file, []byte(content), 0o600))
		if _, err := New(Options{StateFile: file}); err == nil || !strings.Contains(err.Error(), "delete it") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// The moved clock expires sessions and closes offers.
func TestAdvanceClock(t *testing.T) {
	e := newEnv(t)
	sess := createSession(t, e, nil)
	r := startAction(t, e, "5454545454545454", "")
	now, err := e.sim.AdvanceClock(12 * time.Hour)
	if err != nil || !now.Equal(testStart.Add(12*time.Hour)) {
		t.Fatalf("AdvanceClock: %s %v", now, err)
	}
	if _, err := e.sim.PaySession(context.Background(), sess.ID, SessionPayment{}); err != ErrSessionExpired {
		t.Fatalf("expired session: %v", err)
	}
	if got := e.sim.ExpireOffers(); len(got) != 1 || got[0] != r.PSPReference {
		t.Fatalf("closed %v, want %s", got, r.PSPReference)
	}
}

// The clock moves forward only, by at most MaxClockStep a step, and never
// past what its offset holds: a refused step changes nothing.
func TestAdvanceClockBounds(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		by time.Duration
		ok bool
	}{
		{0, true}, {MaxClockStep, true}, {MaxClockStep + 1, false}, {-time.Nanosecond, false}, {math.MaxInt64, false},
	} {
		before := e.sim.ClockOffset()
		_, err := e.sim.AdvanceClock(tc.by)
		if (err == nil) != tc.ok || (err != nil && e.sim.ClockOffset() != before) {
			t.Errorf("AdvanceClock(%s): %v, offset %s (was %s)", tc.by, err, e.sim.ClockOffset(), before)
		}
	}
	steps := 0
	for ; steps < 1000; steps++ {
		if _, err := e.sim.AdvanceClock(MaxClockStep); err != nil {
			break
		}
	}
	off := e.sim.ClockOffset()
	if steps == 1000 || off <= 0 {
		t.Fatalf("after %d steps of 400 days the offset is %s", steps, off)
	}
	room := time.Duration(math.MaxInt64) - off
	if _, err := e.sim.AdvanceClock(room + 1); err == nil || e.sim.ClockOffset() != off {
		t.Fatalf("a step past the offset's end: %v, offset %s", err, e.sim.ClockOffset())
	}
	if _, err := e.sim.AdvanceClock(room); err != nil {
		t.Fatalf("the last step: %v", err)
	}
	if now, err := e.sim.AdvanceClock(time.Nanosecond); err == nil || now.Before(testStart) {
		t.Fatalf("a step at the offset's end: %s %v", now, err)
	}
}
