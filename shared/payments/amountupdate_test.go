package payments_test

import (
	"slices"
	"sync"
	"testing"

	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/testutil/hang"
)

// whileCalled makes the upstream's answer to the next modification wait
// until the payment's head has been read, and returns the accesses
// recorded from then on.
func (f *fixture) whileCalled() func() []string {
	read := make(chan struct{})
	var once sync.Once
	f.st.onRead = func() { once.Do(func() { close(read) }) }
	deadline := hang.Deadline(f.t)
	during := f.up.during
	f.up.during = func(mod string) {
		select {
		case <-read:
		case <-deadline:
			f.t.Error("the payment's head was not read while the upstream answered")
		}
		if during != nil {
			during(mod)
		}
	}
	return f.st.record()
}

// An amount update's answer starts from the head read while the upstream
// answered: after the call, the answer's write alone (no read), so the
// request takes one DynamoDB step before the call and one after.
func TestAmountUpdateReadsItsHeadWhileTheUpstreamAnswers(t *testing.T) {
	f := authorisedFixture(t)
	accesses := f.whileCalled()
	f.must(f.updateAmount(1500))
	// the reservation (a write), the read during the call, the answer
	wantAccesses := []string{"write " + psp, "read " + psp, "write " + psp}
	if got := accesses(); !slices.Equal(got, wantAccesses) {
		t.Fatalf("accesses %q, want %q", got, wantAccesses)
	}
	f.check(want{payments.StateAuthorised, 1500, 0, 0, 0})
}

// A write landing between that read and the answer (a notification
// applied while the upstream answers) fails the answer's version
// condition: the answer reads again, and both changes stand.
func TestAmountUpdateReadsAgainAfterAWriteLandedDuringItsCall(t *testing.T) {
	f := authorisedFixture(t)
	landed := -1 // the accesses recorded once the notification landed
	var accesses func() []string
	f.up.during = func(string) {
		f.mustApply(authorisation("true", 1000))
		landed = len(accesses())
	}
	accesses = f.whileCalled()
	f.must(f.updateAmount(1500))
	// after it: the answer's write (its version condition fails), the
	// head read again, the answer written from it
	got := accesses()
	if landed < 0 || len(got) <= landed || got[landed] != "write "+psp || !slices.Contains(got[landed:], "read "+psp) {
		t.Fatalf("accesses %q (the notification landed after %d): want the answer's write, then the head read again", got, landed)
	}
	f.check(want{payments.StateAuthorised, 1500, 0, 0, 1})
}
