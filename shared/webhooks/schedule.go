package webhooks

import "time"

// MaxAttempts is how many times one delivery is attempted (docs/webhooks.md).
const MaxAttempts = 10

// MaxHop is the longest wait between two attempts: SQS can hide a message
// for at most 12 hours, which carries the wait in production.
const MaxHop = 12 * time.Hour

// schedule[n-1] is the nominal wait before attempt n: immediately, 5 s,
// 5 min, 30 min, 2 h, 5 h, 10 h, 12 h, 12 h, 12 h (about 54 h in all).
var schedule = [MaxAttempts]time.Duration{
	0,
	5 * time.Second,
	5 * time.Minute,
	30 * time.Minute,
	2 * time.Hour,
	5 * time.Hour,
	10 * time.Hour,
	12 * time.Hour,
	12 * time.Hour,
	12 * time.Hour,
}

// Jitter is the relative spread applied to every wait: ±10 %.
const Jitter = 0.10

// NominalDelay returns the scheduled wait before attempt n (1-based)
// without jitter; 0 for the first attempt and outside the schedule.
func NominalDelay(attempt int) time.Duration {
	if attempt < 1 || attempt > MaxAttempts {
		return 0
	}
	return schedule[attempt-1]
}

// RetryDelay returns the wait before attempt next (2…MaxAttempts): the
// scheduled wait scaled by a factor in [0.9, 1.1) drawn from rnd (which
// returns values in [0, 1)), and never more than MaxHop.
func RetryDelay(next int, rnd func() float64) time.Duration {
	d := NominalDelay(next)
	if d == 0 {
		return 0
	}
	r := rnd()
	if r < 0 || r >= 1 {
		r = 0.5
	}
	factor := 1 - Jitter + 2*Jitter*r
	return min(time.Duration(float64(d)*factor), MaxHop)
}
