package hang

import (
	"testing"
	"time"
)

type fixed struct {
	testing.TB
	d  time.Time
	ok bool
}

func (f fixed) Deadline() (time.Time, bool) { return f.d, f.ok }

func TestDeadline(t *testing.T) {
	if Deadline(fixed{TB: t}) != nil {
		t.Error("a binary without a deadline got a channel that may close")
	}
	// A deadline already within the margin: the wait ends at once (were
	// it not, the binary's own timeout would fail the test).
	<-Deadline(fixed{TB: t, d: time.Now(), ok: true})
}
