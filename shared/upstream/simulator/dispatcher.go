package simulator

import (
	"context"
	"log/slog"
	"slices"
	"sync"

	"github.com/yp/paysvc/shared/upstream"
)

// Notifier delivers one notification body ({"live":…,"notificationItems":[one
// item]}). It returns nil once the receiver accepted it.
type Notifier interface {
	Notify(ctx context.Context, body []byte) error
}

// NotifierFunc adapts a function to Notifier.
type NotifierFunc func(ctx context.Context, body []byte) error

// Notify calls f.
func (f NotifierFunc) Notify(ctx context.Context, body []byte) error { return f(ctx, body) }

// outgoing is a notification waiting for delivery.
type outgoing struct {
	body []byte
	item upstream.NotificationRequestItem
}

// dispatcher delivers notifications one at a time, in order, on its own
// goroutine, applying the configured faults. Like the upstream, a
// notification that keeps failing holds back the ones behind it while the
// Notifier retries it.
type dispatcher struct {
	notifier Notifier
	log      *slog.Logger
	ctx      context.Context
	cancel   context.CancelFunc
	done     chan struct{}
	wake     chan struct{}
	counted  func() // testHooks.delivered

	mu      sync.Mutex
	faults  Faults
	seq     int
	queue   []outgoing
	held    []outgoing
	busy    bool
	waiters []chan struct{}
	st      NotificationStats
}

func newDispatcher(n Notifier, f Faults, log *slog.Logger, counted func()) *dispatcher {
	ctx, cancel := context.WithCancel(context.Background())
	d := &dispatcher{
		notifier: n, log: log, ctx: ctx, cancel: cancel, faults: f, counted: counted,
		done: make(chan struct{}), wake: make(chan struct{}, 1),
	}
	go d.run()
	return d
}

func (d *dispatcher) setFaults(f Faults) {
	d.mu.Lock()
	d.faults = f
	d.mu.Unlock()
}

// enqueue applies drop, reorder and duplicate faults and queues o.
func (d *dispatcher) enqueue(o outgoing) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.seq++
	f := d.faults
	if f.DropEvery > 0 && d.seq%f.DropEvery == 0 || f.Drop != nil && f.Drop(o.item) {
		d.st.Dropped++
		d.log.Info("upstream-sim notification dropped (fault injection)", "eventCode", o.item.EventCode, "pspReference", o.item.PSPReference)
		return
	}
	if f.Reorder > 1 {
		d.held = append(d.held, o)
		if len(d.held) >= f.Reorder {
			d.releaseHeld()
		}
		return
	}
	d.push(o)
}

// push queues o and its duplicates (caller holds d.mu).
func (d *dispatcher) push(o outgoing) {
	for range 1 + max(d.faults.Duplicate, 0) {
		d.queue = append(d.queue, o)
	}
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// releaseHeld queues the held notifications in reverse order (caller holds d.mu).
func (d *dispatcher) releaseHeld() {
	held := d.held
	d.held = nil
	slices.Reverse(held)
	for _, o := range held {
		d.push(o)
	}
}

func (d *dispatcher) run() {
	defer close(d.done)
	for {
		d.mu.Lock()
		if len(d.queue) == 0 {
			d.notifyIdle()
			d.mu.Unlock()
			select {
			case <-d.wake:
				continue
			case <-d.ctx.Done():
				return
			}
		}
		o := d.queue[0]
		d.queue = d.queue[1:]
		d.busy = true
		delay := d.faults.Delay
		d.mu.Unlock()

		var err error
		if delay > 0 {
			err = sleep(d.ctx, delay)
		}
		if err == nil && d.notifier != nil {
			err = d.notifier.Notify(d.ctx, o.body)
		}

		d.mu.Lock()
		d.busy = false
		switch {
		case err == nil:
			if d.notifier != nil {
				d.st.Sent++
			}
		case d.ctx.Err() != nil:
		default:
			d.st.Failed++
			d.log.Warn("upstream-sim notification not accepted", "eventCode", o.item.EventCode,
				"pspReference", o.item.PSPReference, "error", err)
		}
		d.mu.Unlock()
		if d.counted != nil {
			d.counted()
		}
		if d.ctx.Err() != nil {
			return
		}
	}
}

// notifyIdle wakes Flush callers when nothing is queued or being sent
// (caller holds d.mu).
func (d *dispatcher) notifyIdle() {
	if len(d.queue) > 0 || d.busy {
		return
	}
	for _, w := range d.waiters {
		close(w)
	}
	d.waiters = nil
}

func (d *dispatcher) flush(ctx context.Context) error {
	d.mu.Lock()
	if len(d.held) > 0 {
		d.releaseHeld()
	}
	if len(d.queue) == 0 && !d.busy {
		d.mu.Unlock()
		return nil
	}
	w := make(chan struct{})
	d.waiters = append(d.waiters, w)
	d.mu.Unlock()
	select {
	case <-w:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-d.done:
		return context.Canceled
	}
}

func (d *dispatcher) stats() NotificationStats {
	d.mu.Lock()
	defer d.mu.Unlock()
	st := d.st
	st.Pending = len(d.queue) + len(d.held)
	if d.busy {
		st.Pending++
	}
	return st
}

func (d *dispatcher) close() {
	d.cancel()
	<-d.done
}
