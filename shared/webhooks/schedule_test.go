package webhooks_test

import (
	"testing"
	"time"

	"github.com/yp/paysvc/shared/webhooks"
)

func TestRetrySchedule(t *testing.T) {
	want := []time.Duration{0, 5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour,
		5 * time.Hour, 10 * time.Hour, 12 * time.Hour, 12 * time.Hour, 12 * time.Hour}
	if webhooks.MaxAttempts != len(want) {
		t.Fatalf("MaxAttempts %d, want %d", webhooks.MaxAttempts, len(want))
	}
	var total time.Duration
	for i, w := range want {
		attempt := i + 1
		if got := webhooks.NominalDelay(attempt); got != w {
			t.Errorf("NominalDelay(%d) = %s, want %s", attempt, got, w)
		}
		total += w
		if attempt == 1 {
			continue
		}
		mid := webhooks.RetryDelay(attempt, func() float64 { return 0.5 })
		lo := webhooks.RetryDelay(attempt, func() float64 { return 0 })
		hi := webhooks.RetryDelay(attempt, func() float64 { return 0.999999 })
		if mid != w {
			t.Errorf("RetryDelay(%d) without jitter = %s, want %s", attempt, mid, w)
		}
		if lo != time.Duration(float64(w)*0.9) {
			t.Errorf("RetryDelay(%d) lowest = %s, want %s", attempt, lo, time.Duration(float64(w)*0.9))
		}
		if hi > w+w/10 || hi < w {
			t.Errorf("RetryDelay(%d) highest = %s, want within +10 %% of %s", attempt, hi, w)
		}
		if hi > webhooks.MaxHop {
			t.Errorf("RetryDelay(%d) = %s exceeds the 12 h hop", attempt, hi)
		}
	}
	if total < 53*time.Hour || total > 55*time.Hour {
		t.Errorf("schedule totals %s, want about 54 h", total)
	}
	if d := webhooks.RetryDelay(1, func() float64 { return 0.3 }); d != 0 {
		t.Errorf("the first attempt is immediate, got %s", d)
	}
	if d := webhooks.RetryDelay(11, func() float64 { return 0.3 }); d != 0 {
		t.Errorf("beyond the schedule: %s", d)
	}
}
