package simulator

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	"github.com/yp/paysvc/shared/clock"
)

// stateVersion is the format of Options.StateFile.
const stateVersion = 2

// savedState is what Options.StateFile keeps: everything a shopper's link
// or a later request can refer to. Emitted notifications, request counts,
// injected failures and queued deliveries are not kept.
type savedState struct {
	Version     int               `json:"version"`
	ClockOffset time.Duration     `json:"clockOffset"`
	ActionSeq   int               `json:"actionSeq"`
	Payments    []*payment        `json:"payments"` // oldest first
	ModRefs     map[string]string `json:"modRefs"`
	Sessions    []*session        `json:"sessions"`
	Actions     []*action         `json:"actions"`
	Tokens      []*storedMethod   `json:"tokens"`
	Idempotency []savedIdem       `json:"idempotency"`
}

// savedIdem is a completed Idempotency-Key and its answer.
type savedIdem struct {
	Key         string    `json:"key"` // scope NUL key
	Fingerprint []byte    `json:"fingerprint"`
	Created     time.Time `json:"created"`
	Status      int       `json:"status"`
	Body        []byte    `json:"body"`
}

// offsetClock is the simulator's clock: Options.Clock moved on by
// AdvanceClock.
type offsetClock struct {
	base   clock.Clock
	offset *atomic.Int64 // nanoseconds
}

func (c offsetClock) Now() time.Time { return c.base.Now().Add(time.Duration(c.offset.Load())) }

// Now returns the simulator's time: its clock moved on by AdvanceClock.
func (s *Simulator) Now() time.Time { return s.clock.Now() }

// MaxClockStep is the most one AdvanceClock moves the clock: 400 days.
const MaxClockStep = 400 * 24 * time.Hour

// AdvanceClock moves the simulator's clock forward by d, at most
// MaxClockStep (sessions expire, offers can be closed with ExpireOffers),
// and returns the new time. The service's own clock does not move. A
// negative or larger d, or one the offset cannot hold, is an error.
func (s *Simulator) AdvanceClock(d time.Duration) (time.Time, error) {
	if d < 0 || d > MaxClockStep {
		return s.Now(), fmt.Errorf("simulator: the clock moves forward by 0 to 400 days (%s) a step, not %s", MaxClockStep, d)
	}
	for {
		old := s.offset.Load()
		if old > math.MaxInt64-int64(d) {
			return s.Now(), fmt.Errorf("simulator: the clock cannot move %s further", d)
		}
		if s.offset.CompareAndSwap(old, old+int64(d)) {
			break
		}
	}
	s.persist()
	return s.Now(), nil
}

// ClockOffset returns how far AdvanceClock has moved the clock in all.
func (s *Simulator) ClockOffset() time.Duration { return time.Duration(s.offset.Load()) }

// persist writes the state to Options.StateFile (when set). A failure is
// logged: the simulator goes on in memory.
func (s *Simulator) persist() {
	if s.opts.StateFile == "" {
		return
	}
	s.saveMu.Lock()
	defer s.saveMu.Unlock()
	b, err := s.marshalState()
	if err == nil {
		err = writeFileAtomic(s.opts.StateFile, b)
	}
	if err != nil {
		s.log.Error("upstream-sim: saving the state failed", "file", s.opts.StateFile, "err", err.Error())
	}
}

// marshalState encodes the state to keep.
func (s *Simulator) marshalState() ([]byte, error) {
	st := savedState{Version: stateVersion, Idempotency: s.idem.saved()}
	s.mu.Lock()
	defer s.mu.Unlock() // marshalled under the lock: the records are shared
	st.ClockOffset, st.ActionSeq, st.ModRefs = s.ClockOffset(), s.actionSeq, s.modRefs
	st.Payments = make([]*payment, 0, len(s.paymentOrder))
	for _, psp := range s.paymentOrder {
		st.Payments = append(st.Payments, s.payments[psp])
	}
	st.Sessions, st.Actions = slices.Collect(maps.Values(s.sessions)), slices.Collect(maps.Values(s.actions))
	for _, ts := range s.tokens {
		st.Tokens = append(st.Tokens, ts...)
	}
	return json.Marshal(st)
}

// restore loads Options.StateFile when it exists.
func (s *Simulator) restore() error {
	if s.opts.StateFile == "" {
		return nil
	}
	b, err := os.ReadFile(s.opts.StateFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("simulator: read the state file: %w", err)
	}
	var st savedState
	if err := json.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("simulator: the state file %s is not readable (%v); delete it to start the simulator afresh", s.opts.StateFile, err)
	}
	if st.Version != stateVersion {
		return fmt.Errorf("simulator: the state file %s has version %d, this simulator reads %d; delete it to start afresh", s.opts.StateFile, st.Version, stateVersion)
	}
	s.offset.Store(int64(st.ClockOffset))
	s.actionSeq = st.ActionSeq
	for _, p := range st.Payments {
		s.payments[p.PSP] = p
		s.paymentOrder = append(s.paymentOrder, p.PSP)
	}
	maps.Copy(s.modRefs, st.ModRefs)
	for _, sess := range st.Sessions {
		if sess.Req.Amount == nil || sess.Req.Amount.Value == nil {
			return fmt.Errorf("simulator: the state file %s has session %s without an amount; delete it to start afresh", s.opts.StateFile, sess.ID)
		}
		s.sessions[sess.ID] = sess
	}
	for _, a := range st.Actions {
		s.actions[a.ID] = a
		if a.PaymentData != "" {
			s.actionsByData[a.PaymentData] = a
		}
	}
	for _, t := range st.Tokens {
		k := tokenKey{t.MerchantAccount, t.ShopperReference}
		s.tokens[k] = append(s.tokens[k], t)
	}
	s.idem.load(st.Idempotency)
	return nil
}

// writeFileAtomic replaces path with b: written beside it (os.CreateTemp
// makes it 0600), then renamed.
func writeFileAtomic(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(b)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
	}
	return err
}
