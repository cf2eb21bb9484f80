package idempotency_test

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/apperr"
	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/idempotency"
	"github.com/yp/paysvc/shared/store/embedded"
)

func newService(t *testing.T) (*idempotency.Service, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC))
	st, err := embedded.Open(filepath.Join(t.TempDir(), "db"), embedded.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return idempotency.New(st, clk, 60*time.Second, 0, slog.New(slog.NewJSONHandler(io.Discard, nil))), clk
}

func TestParseKey(t *testing.T) {
	long := string(make([]byte, 256))
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"abc", "abc", true},
		{`"quoted-key"`, "quoted-key", true},
		{"order-1001:capture#2", "order-1001:capture#2", true},
		{"", "", false},
		{`""`, "", false},
		{"tab\tkey", "", false},
		{"é", "", false},
		{long, "", false},
	} {
		got, err := idempotency.ParseKey(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseKey(%q) = %q, %v", tc.in, got, err)
		}
		if err != nil && apperr.KindOf(err) != apperr.Invalid {
			t.Errorf("ParseKey(%q) kind %v", tc.in, apperr.KindOf(err))
		}
	}
}

func TestFingerprintIsCanonical(t *testing.T) {
	a := idempotency.Fingerprint("POST", "/p", []byte(`{"a":1,"b":{"c":[1,2]}}`))
	b := idempotency.Fingerprint("POST", "/p", []byte(" {\"b\": {\"c\": [1, 2]}, \"a\": 1}\n"))
	if a != b {
		t.Fatal("same JSON, different fingerprint")
	}
	for _, other := range []string{
		idempotency.Fingerprint("POST", "/p", []byte(`{"a":2,"b":{"c":[1,2]}}`)),
		idempotency.Fingerprint("POST", "/q", []byte(`{"a":1,"b":{"c":[1,2]}}`)),
		idempotency.Fingerprint("PUT", "/p", []byte(`{"a":1,"b":{"c":[1,2]}}`)),
		idempotency.Fingerprint("POST", "/p", []byte(`{"a":1,"b":{"c":[2,1]}}`)),
	} {
		if other == a {
			t.Fatal("different request, same fingerprint")
		}
	}
}

func TestUpstreamKeyIsScopedAndShort(t *testing.T) {
	fp := idempotency.Fingerprint("POST", "/v1/ecom/site_a/payments", []byte(`{"amount":{"value":1000,"currency":"EUR"}}`))
	k1 := idempotency.UpstreamKey("m_a", "key", fp)
	if len(k1) > 64 || k1 != idempotency.UpstreamKey("m_a", "key", fp) {
		t.Fatalf("key %q", k1)
	}
	other := idempotency.Fingerprint("POST", "/v1/ecom/site_a/payments", []byte(`{"amount":{"value":1001,"currency":"EUR"}}`))
	for _, k := range []string{
		idempotency.UpstreamKey("m_b", "key", fp),    // another merchant
		idempotency.UpstreamKey("m_a", "key2", fp),   // another key
		idempotency.UpstreamKey("m_a", "key", other), // the key reused for another request
	} {
		if k == k1 {
			t.Fatal("derived keys collide")
		}
	}
	// The derivation never changes within a version: a merchant's retry
	// across a deploy must send the upstream the same key (base64url of
	// SHA-256 of "paysvc/v2\x00" + scope + "\x00" + key + "\x00" +
	// fingerprint, unpadded).
	if k := idempotency.UpstreamKey("m_a", "key", "fp"); k != wantUpstreamKeyV2 {
		t.Fatalf("UpstreamKey changed: %q", k)
	}
}

const wantUpstreamKeyV2 = "ehSOxK7SDrBSKxZYD_4fOomV8PXfQQI0X5bxBGFtN5c"

func TestBeginFinishLifecycle(t *testing.T) {
	ctx := context.Background()
	s, clk := newService(t)
	lease, replay, err := s.Begin(ctx, "m", "k", "fp1")
	if err != nil || lease == nil || replay != nil {
		t.Fatalf("first Begin: %v %v %v", lease, replay, err)
	}
	if _, _, err := s.Begin(ctx, "m", "k", "fp1"); apperr.KindOf(err) != apperr.IdempotencyInFlight {
		t.Fatalf("concurrent duplicate: %v", err)
	}
	if _, _, err := s.Begin(ctx, "m", "k", "fp2"); apperr.KindOf(err) != apperr.IdempotencyMismatch {
		t.Fatalf("different request while in flight: %v", err)
	}
	if _, _, err := s.Begin(ctx, "other", "k", "fp1"); err != nil {
		t.Fatalf("other merchant's same key: %v", err)
	}
	body := []byte{0, 1, 2, '{', '}', 0xff}
	s.Finish(ctx, lease, idempotency.Response{Status: 200, Body: body, Header: map[string]string{"Content-Type": "application/json"}}, true)
	_, replay, err = s.Begin(ctx, "m", "k", "fp1")
	if err != nil || replay == nil || replay.Status != 200 || string(replay.Body) != string(body) {
		t.Fatalf("replay: %+v %v", replay, err)
	}
	if _, _, err := s.Begin(ctx, "m", "k", "fp2"); apperr.KindOf(err) != apperr.IdempotencyMismatch {
		t.Fatalf("different request after completion: %v", err)
	}
	// Retention: kept as long as the upstream keeps its keys (31 days),
	// then new again.
	clk.Advance(31*24*time.Hour - time.Second)
	if _, _, err := s.Begin(ctx, "m", "k", "fp2"); apperr.KindOf(err) != apperr.IdempotencyMismatch {
		t.Fatalf("day 31: %v", err)
	}
	clk.Advance(2 * time.Second)
	if lease, _, err := s.Begin(ctx, "m", "k", "fp2"); err != nil || lease == nil {
		t.Fatalf("after retention: %v", err)
	}
}

func TestReleasedKeyRunsAgain(t *testing.T) {
	ctx := context.Background()
	s, _ := newService(t)
	lease, _, _ := s.Begin(ctx, "m", "k", "fp")
	s.Finish(ctx, lease, idempotency.Response{Status: 500, Body: []byte(`{}`)}, false)
	lease, replay, err := s.Begin(ctx, "m", "k", "fp")
	if err != nil || lease == nil || replay != nil {
		t.Fatalf("after release: %v %v %v", lease, replay, err)
	}
}

func TestLeaseExpiryLetsARetryProceed(t *testing.T) {
	ctx := context.Background()
	s, clk := newService(t)
	if _, _, err := s.Begin(ctx, "m", "k", "fp"); err != nil { // then the process "crashes"
		t.Fatal(err)
	}
	clk.Advance(59 * time.Second)
	if _, _, err := s.Begin(ctx, "m", "k", "fp"); apperr.KindOf(err) != apperr.IdempotencyInFlight {
		t.Fatalf("within the lease: %v", err)
	}
	clk.Advance(2 * time.Second)
	lease, _, err := s.Begin(ctx, "m", "k", "fp")
	if err != nil || lease == nil {
		t.Fatalf("after the lease: %v", err)
	}
}

func TestKeep(t *testing.T) {
	for _, tc := range []struct {
		status int
		called bool
		want   bool
	}{
		{200, true, true}, {200, false, true}, {400, true, true}, {400, false, false},
		{404, true, false}, {409, true, false}, {422, true, false}, {429, false, false}, {500, true, false}, {503, true, false},
	} {
		if got := idempotency.Keep(tc.status, tc.called); got != tc.want {
			t.Errorf("Keep(%d, %v) = %v", tc.status, tc.called, got)
		}
	}
}

// TestDerivationsAreStable: the fingerprint and the derived upstream key
// are part of what retries across releases rely on (a retry after a deploy
// must send the platform the key the first attempt sent): their values are
// pinned, computed outside Go (Python's hashlib).
func TestDerivationsAreStable(t *testing.T) {
	if k := idempotency.UpstreamKey("m_demo", "order-2026-000123-attempt-1", "0a2f9c"); k != "N_GK9l3SoPe8a4BO8Xg3nH6tjafvmg24Jk8wEtW3EkE" {
		t.Fatalf("UpstreamKey = %q: the derivation changed", k)
	}
	// SHA-256 of "POST\x00<path>\x00" and the body's canonical JSON (members sorted).
	if fp := idempotency.Fingerprint("POST", "/v1/ecom/site_a/payments", []byte(`{"b":1,"a":[true,null]}`)); fp != "875cffdab7007e25e74416b390320619d4705f9b7923c003dd0d5e32cabce5e6" {
		t.Fatalf("Fingerprint = %q: the derivation changed", fp)
	}
}
