package simulator

import (
	"net/http"
	"sync"
	"time"
)

// idemEntry is one Idempotency-Key: in flight until done.
type idemEntry struct {
	fingerprint [32]byte
	created     time.Time
	done        bool
	res         result
}

// idemStore implements the upstream's Idempotency-Key behaviour: keys are
// scoped to the API key (the upstream scopes them to the company account),
// a completed request's answer is replayed, a concurrent duplicate gets 409
// "704", and answers of 5xx are not kept (the key can be used again).
type idemStore struct {
	mu      sync.Mutex
	m       map[string]*idemEntry
	settled func(key string) // testHooks.keySettled
}

func newIdemStore(settled func(key string)) *idemStore {
	return &idemStore{m: map[string]*idemEntry{}, settled: settled}
}

// do runs fn once per (scope, key) and reports whether the answer is a replay.
func (st *idemStore) do(scope, key string, fp [32]byte, now time.Time, strict bool, fn func() result) (res result, replayed bool) {
	k := scope + "\x00" + key
	st.mu.Lock()
	if e, ok := st.m[k]; ok && now.Sub(e.created) < IdempotencyRetention {
		defer st.mu.Unlock()
		switch {
		case !e.done:
			return errorResult(errInFlight()), false
		case strict && e.fingerprint != fp:
			return errorResult(validationError(codeGeneric, "Idempotency-Key was already used for a different request")), false
		}
		return e.res, true
	}
	e := &idemEntry{fingerprint: fp, created: now}
	st.m[k] = e
	st.mu.Unlock()

	completed := false
	defer func() {
		st.mu.Lock()
		if !completed || res.status >= http.StatusInternalServerError {
			delete(st.m, k) // not processed (or panicked): the key may be used again
		} else {
			e.done, e.res = true, res
		}
		st.mu.Unlock()
		if st.settled != nil {
			st.settled(key)
		}
	}()
	res = fn()
	completed = true
	return res, false
}

// saved returns the completed keys still retained, for the state file.
func (st *idemStore) saved() []savedIdem {
	st.mu.Lock()
	defer st.mu.Unlock()
	out := make([]savedIdem, 0, len(st.m))
	for k, e := range st.m {
		if e.done {
			out = append(out, savedIdem{Key: k, Fingerprint: e.fingerprint[:], Created: e.created, Status: e.res.status, Body: e.res.body})
		}
	}
	return out
}

// load adds the keys of a state file.
func (st *idemStore) load(keys []savedIdem) {
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, k := range keys {
		e := &idemEntry{created: k.Created, done: true, res: result{status: k.Status, body: k.Body}}
		copy(e.fingerprint[:], k.Fingerprint)
		st.m[k.Key] = e
	}
}
