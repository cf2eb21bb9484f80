package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/idempotency"
	"github.com/yp/paysvc/shared/storeerr"
)

// Lease and retention used by the idempotency tests.
const (
	testLease     = 30 * time.Second
	testRetention = 24 * time.Hour
)

// TestIdempotencyStore checks the idempotency.Store contract: Claim succeeds
// on an absent, expired or abandoned record and otherwise returns the
// existing record with storeerr.ErrConflict; Complete and Release act only for
// the lease holder; responses replay byte-for-byte; concurrent claims of one
// key have exactly one winner.
func TestIdempotencyStore(t *testing.T, newStore Factory[idempotency.Store]) {
	t.Helper()
	t.Run("Claim", func(t *testing.T) { testClaimCases(t, newStore) })
	runCases(t, newStore, []testCase[idempotency.Store]{
		{"ScopedByMerchant", testIdemScoped},
		{"CompleteRequiresLease", testCompleteRequiresLease},
		{"ReleaseRequiresLease", testReleaseRequiresLease},
		{"ReleaseAfterCompleteKeepsRecord", testReleaseAfterComplete},
		{"ResponseRoundTrip", testResponseRoundTrip},
		{"TimesStoredAsUTC", testIdemTimesUTC},
		{"ConcurrentClaimsOneWinner", testConcurrentClaims},
	})
}

// claimAt returns an in-progress record for (scope, key) claimed at now.
func claimAt(scope, key, token string, now time.Time) idempotency.Record {
	return idempotency.Record{
		Scope: scope, Key: key, Fingerprint: "fp-" + token, Status: idempotency.StatusInProgress,
		LeaseToken: token, LeaseUntil: now.Add(testLease), ExpiresAt: now.Add(testRetention),
	}
}

func testResponse() idempotency.Response {
	return idempotency.Response{
		Status: 201,
		Header: map[string]string{"Content-Type": "application/json", "X-Request-Id": "req_1"},
		Body:   []byte(`{"pspReference":"PSP1","resultCode":"Authorised"}`),
	}
}

func testClaimCases(t *testing.T, newStore Factory[idempotency.Store]) {
	ctx := context.Background()
	t0 := epoch()
	tests := []struct {
		name string
		// setup prepares the existing record (claimed at t0 with token "old").
		setup func(t *testing.T, s idempotency.Store)
		now   time.Time
		// wantConflict: the claim must fail and return the existing record.
		wantConflict bool
		wantExisting idempotency.Record
	}{
		{
			name:  "empty",
			setup: func(*testing.T, idempotency.Store) {},
			now:   t0,
		},
		{
			name:         "in progress, live lease",
			setup:        claimOld,
			now:          t0.Add(testLease - time.Nanosecond),
			wantConflict: true,
			wantExisting: claimAt("m_a", "key-1", "old", t0),
		},
		{
			name:  "in progress, lease ended exactly now",
			setup: claimOld,
			now:   t0.Add(testLease),
		},
		{
			name:  "in progress, lease ended",
			setup: claimOld,
			now:   t0.Add(time.Hour),
		},
		{
			name:         "completed, lease time passed but not expired",
			setup:        completeOld,
			now:          t0.Add(time.Hour),
			wantConflict: true,
			wantExisting: completedOld(),
		},
		{
			name:  "completed, expired exactly now",
			setup: completeOld,
			now:   t0.Add(2 * testRetention),
		},
		{
			name: "in progress with live lease but expired",
			setup: func(t *testing.T, s idempotency.Store) {
				rec := claimAt("m_a", "key-1", "old", t0)
				rec.LeaseUntil = t0.Add(3 * testRetention)
				_, err := s.Claim(ctx, rec, t0)
				noErr(t, err, "Claim old")
			},
			now: t0.Add(testRetention),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t, newClock())
			tc.setup(t, s)
			rec := claimAt("m_a", "key-1", "new", tc.now)
			got, err := s.Claim(ctx, rec, tc.now)
			if tc.wantConflict {
				wantErr(t, err, storeerr.ErrConflict, "Claim")
				same(t, got, tc.wantExisting, "existing record returned by Claim")
				// Nothing was written: the holder of the old lease can still finish.
				if tc.wantExisting.Status == idempotency.StatusInProgress {
					noErr(t, s.Complete(ctx, "m_a", "key-1", "old", testResponse(), t0.Add(testRetention)), "Complete by the old holder")
				}
				wantErr(t, s.Complete(ctx, "m_a", "key-1", "new", testResponse(), t0.Add(testRetention)), storeerr.ErrConflict, "Complete by the loser")
				return
			}
			noErr(t, err, "Claim")
			same(t, got, rec, "record returned by Claim")
			// The new claim holds the key: a second claim conflicts with it,
			// the old holder (if any) can no longer complete, the new one can.
			again, err := s.Claim(ctx, claimAt("m_a", "key-1", "other", tc.now), tc.now)
			wantErr(t, err, storeerr.ErrConflict, "second Claim")
			same(t, again, rec, "record returned by second Claim")
			wantErr(t, s.Complete(ctx, "m_a", "key-1", "old", testResponse(), tc.now.Add(testRetention)), storeerr.ErrConflict, "Complete with the replaced lease")
			noErr(t, s.Complete(ctx, "m_a", "key-1", "new", testResponse(), tc.now.Add(testRetention)), "Complete with the new lease")
		})
	}
}

// claimOld claims m_a/key-1 at epoch with token "old".
func claimOld(t *testing.T, s idempotency.Store) {
	t.Helper()
	_, err := s.Claim(context.Background(), claimAt("m_a", "key-1", "old", epoch()), epoch())
	noErr(t, err, "Claim old")
}

// completeOld claims m_a/key-1 at epoch and completes it, kept 2×retention.
func completeOld(t *testing.T, s idempotency.Store) {
	t.Helper()
	claimOld(t, s)
	noErr(t, s.Complete(context.Background(), "m_a", "key-1", "old", testResponse(), epoch().Add(2*testRetention)), "Complete old")
}

// completedOld is the record completeOld leaves: completed, without a lease.
func completedOld() idempotency.Record {
	rec := claimAt("m_a", "key-1", "old", epoch())
	resp := testResponse()
	rec.Status, rec.LeaseToken, rec.ExpiresAt, rec.Response = idempotency.StatusCompleted, "", epoch().Add(2*testRetention), &resp
	return rec
}

func testIdemScoped(t *testing.T, s idempotency.Store) {
	ctx := context.Background()
	now := epoch()
	for _, scope := range []string{"m_a", "m_b"} {
		rec := claimAt(scope, "shared-key", "tok-"+scope, now)
		got, err := s.Claim(ctx, rec, now)
		noErr(t, err, "Claim in scope "+scope)
		same(t, got, rec, "Claim in scope "+scope)
	}
	wantErr(t, s.Complete(ctx, "m_b", "shared-key", "tok-m_a", testResponse(), now.Add(time.Hour)), storeerr.ErrConflict,
		"Complete with another scope's lease")
	noErr(t, s.Release(ctx, "m_a", "shared-key", "tok-m_a"), "Release m_a")
	got, err := s.Claim(ctx, claimAt("m_b", "shared-key", "x", now), now)
	wantErr(t, err, storeerr.ErrConflict, "m_b's record survives m_a's release")
	same(t, got.LeaseToken, "tok-m_b", "m_b's lease")
}

func testCompleteRequiresLease(t *testing.T, s idempotency.Store) {
	ctx := context.Background()
	now := epoch()
	wantErr(t, s.Complete(ctx, "m_a", "missing", "tok", testResponse(), now.Add(time.Hour)), storeerr.ErrConflict, "Complete of a missing record")
	_, err := s.Claim(ctx, claimAt("m_a", "key-1", "tok", now), now)
	noErr(t, err, "Claim")
	for _, token := range []string{"wrong", ""} {
		wantErr(t, s.Complete(ctx, "m_a", "key-1", token, testResponse(), now.Add(time.Hour)), storeerr.ErrConflict, "Complete with lease "+token)
	}
	got, err := s.Claim(ctx, claimAt("m_a", "key-1", "x", now), now)
	wantErr(t, err, storeerr.ErrConflict, "Claim after failed Complete")
	same(t, got, claimAt("m_a", "key-1", "tok", now), "record after failed Complete")
}

func testReleaseRequiresLease(t *testing.T, s idempotency.Store) {
	ctx := context.Background()
	now := epoch()
	noErr(t, s.Release(ctx, "m_a", "missing", "tok"), "Release of a missing record")
	rec := claimAt("m_a", "key-1", "tok", now)
	_, err := s.Claim(ctx, rec, now)
	noErr(t, err, "Claim")
	for _, token := range []string{"wrong", ""} {
		noErr(t, s.Release(ctx, "m_a", "key-1", token), "Release with lease "+token)
	}
	got, err := s.Claim(ctx, claimAt("m_a", "key-1", "x", now), now)
	wantErr(t, err, storeerr.ErrConflict, "Claim after Release with a wrong lease")
	same(t, got, rec, "record after Release with a wrong lease")

	noErr(t, s.Release(ctx, "m_a", "key-1", "tok"), "Release by the holder")
	next := claimAt("m_a", "key-1", "next", now)
	got, err = s.Claim(ctx, next, now)
	noErr(t, err, "Claim after Release")
	same(t, got, next, "Claim after Release")
	noErr(t, s.Release(ctx, "m_a", "key-1", "tok"), "Release with a stale lease")
	_, err = s.Claim(ctx, claimAt("m_a", "key-1", "x", now), now)
	wantErr(t, err, storeerr.ErrConflict, "a stale Release must not delete the new claim")
}

func testReleaseAfterComplete(t *testing.T, s idempotency.Store) {
	ctx := context.Background()
	completeOld(t, s)
	noErr(t, s.Release(ctx, "m_a", "key-1", "old"), "Release after Complete")
	wantErr(t, s.Complete(ctx, "m_a", "key-1", "old", testResponse(), epoch()), storeerr.ErrConflict, "second Complete")
	got, err := s.Claim(ctx, claimAt("m_a", "key-1", "new", epoch()), epoch())
	wantErr(t, err, storeerr.ErrConflict, "Claim of a completed record")
	same(t, got, completedOld(), "completed record")
}

func testResponseRoundTrip(t *testing.T, s idempotency.Store) {
	ctx := context.Background()
	now := epoch()
	bodies := map[string][]byte{
		"json":     []byte(`{"a":"é","b":"\u2028","c":[1,2.50,"x"]}` + "\n"),
		"binary":   {0x00, 0xff, 0xfe, 0x80, 0xc3, 0x28, 0x00, '\n', '\r', 0x7f, 0xe2, 0x82},
		"empty":    {},
		"ws":       []byte("  {\"spaced\" : true }  "),
		"nul-only": {0},
	}
	for name, body := range bodies {
		t.Run(name, func(t *testing.T) {
			key := "key-" + name
			_, err := s.Claim(ctx, claimAt("m_a", key, "tok", now), now)
			noErr(t, err, "Claim")
			resp := idempotency.Response{
				Status: 422,
				Header: map[string]string{
					"Content-Type":   "application/json; charset=utf-8",
					"X-Weird-Header": "v=1; \"quoted\", ünïcode",
				},
				Body: body,
			}
			noErr(t, s.Complete(ctx, "m_a", key, "tok", resp, now.Add(time.Hour)), "Complete")
			got, err := s.Claim(ctx, claimAt("m_a", key, "x", now), now)
			wantErr(t, err, storeerr.ErrConflict, "Claim of a completed record")
			if got.Response == nil {
				t.Fatal("completed record has no response")
			}
			if string(got.Response.Body) != string(body) {
				t.Fatalf("body: got %q, want %q", got.Response.Body, body)
			}
			same(t, got.Response.Status, resp.Status, "status")
			same(t, got.Response.Header, resp.Header, "header")
			same(t, got.Status, idempotency.StatusCompleted, "record status")
		})
	}
}

func testIdemTimesUTC(t *testing.T, s idempotency.Store) {
	ctx := context.Background()
	now := epoch().In(elsewhere())
	_, err := s.Claim(ctx, claimAt("m_a", "key-1", "tok", now), now)
	noErr(t, err, "Claim")
	got, err := s.Claim(ctx, claimAt("m_a", "key-1", "x", now), now)
	wantErr(t, err, storeerr.ErrConflict, "Claim")
	sameTime(t, got.LeaseUntil, epoch().Add(testLease), "LeaseUntil")
	sameTime(t, got.ExpiresAt, epoch().Add(testRetention), "ExpiresAt")
	noErr(t, s.Complete(ctx, "m_a", "key-1", "tok", testResponse(), now.Add(time.Hour)), "Complete")
	got, err = s.Claim(ctx, claimAt("m_a", "key-1", "x", now), now)
	wantErr(t, err, storeerr.ErrConflict, "Claim")
	sameTime(t, got.ExpiresAt, epoch().Add(time.Hour), "ExpiresAt after Complete")
}

func testConcurrentClaims(t *testing.T, s idempotency.Store) {
	ctx := context.Background()
	now := epoch()
	const n = 20
	type result struct {
		rec idempotency.Record
		err error
	}
	results := make([]result, n)
	runConcurrently(n, func(i int) {
		rec, err := s.Claim(ctx, claimAt("m_a", "race", name("tok", i), now), now)
		results[i] = result{rec, err}
	})
	winner := -1
	for i, r := range results {
		switch {
		case r.err == nil:
			if winner >= 0 {
				t.Fatalf("two concurrent claims succeeded: %d and %d", winner, i)
			}
			winner = i
		case !errors.Is(r.err, storeerr.ErrConflict):
			t.Fatalf("claim %d: unexpected error %v", i, r.err)
		}
	}
	if winner < 0 {
		t.Fatal("no concurrent claim succeeded")
	}
	for i, r := range results {
		if i != winner && r.rec.LeaseToken != name("tok", winner) {
			t.Fatalf("claim %d lost but saw lease %q, want the winner's %q", i, r.rec.LeaseToken, name("tok", winner))
		}
	}
	noErr(t, s.Complete(ctx, "m_a", "race", name("tok", winner), testResponse(), now.Add(time.Hour)), "Complete by the winner")
}
