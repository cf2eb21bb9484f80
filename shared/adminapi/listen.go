package adminapi

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/yp/paysvc/shared/httpapi"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/webhooks"
	"github.com/yp/paysvc/shared/webhooks/sender"
)

// listenBuffer is how many webhooks a listener may fall behind by; a
// listener further behind loses the oldest ones (and is told).
const listenBuffer = 256

// Hub holds the listeners (paysvc-admin listen): each receives every event
// of its merchant recorded while it listens, as the webhook a subscription
// would receive (the same body and headers), signed with a secret of its
// own. Nothing is stored: no subscription, no delivery records.
type Hub struct {
	local *Local

	mu        sync.Mutex
	listeners map[*Listener]struct{}
	notifyMu  sync.Mutex // one Notify at a time: events reach a listener once, in order

	// What became of each event sent to listeners (for trigger), the
	// latest listenOutcomes events; changed is closed and replaced when
	// one changes.
	outMu    sync.Mutex
	outcomes map[string]map[string]Target // event id → listener id → outcome
	outOrder []string
	changed  chan struct{}
}

// listenOutcomes is how many events' outcomes the hub remembers.
const listenOutcomes = 1024

func newHub(l *Local) *Hub {
	return &Hub{local: l, listeners: map[*Listener]struct{}{}, outcomes: map[string]map[string]Target{}, changed: make(chan struct{})}
}

// Listener is one listen session.
type Listener struct {
	// ID names this listen (lst_…) in its reports and in trigger's.
	ID         string
	MerchantID string
	// To is where its CLI sends the webhooks (a URL), or "" when it
	// prints them.
	To string
	// Secret signs the webhooks of this listener (whsec_…), made for it.
	Secret string
	// C carries the webhooks; closed by Close.
	C <-chan Webhook

	c     chan Webhook
	codes []string
	seen  map[string]bool // event ids already sent or already there at the start
	hub   *Hub

	mu     sync.Mutex // guards closed and sending on c
	closed bool
}

// Webhook is one event as a listener receives it.
type Webhook struct {
	EventID      string          `json:"eventId"`
	EventCode    string          `json:"eventCode"`
	PSPReference string          `json:"pspReference"`
	Headers      http.Header     `json:"headers"`
	Body         json.RawMessage `json:"body"`
	// Missed counts webhooks dropped before this one because the listener
	// fell behind.
	Missed int `json:"missed,omitempty"`
}

// Listen registers a listener for merchantID's events (of codes only, when
// given) whose CLI sends them to (a URL; "": prints them). Events already
// recorded are not sent.
func (h *Hub) Listen(ctx context.Context, merchantID, to string, codes []string) (*Listener, error) {
	if _, err := h.local.Merchant(ctx, merchantID); err != nil {
		return nil, err
	}
	secret, err := tenant.NewWebhookSecret()
	if err != nil {
		return nil, err
	}
	c := make(chan Webhook, listenBuffer)
	l := &Listener{ID: "lst_" + strings.ToLower(newPSP()), MerchantID: merchantID, To: to, Secret: secret, C: c, c: c, codes: codes,
		seen: map[string]bool{}, hub: h}
	h.notifyMu.Lock()
	defer h.notifyMu.Unlock()
	events, err := h.local.Events(ctx, merchantID, "", 100)
	if err != nil {
		return nil, err
	}
	for _, e := range events {
		l.seen[e.ID] = true
	}
	h.mu.Lock()
	h.listeners[l] = struct{}{}
	h.mu.Unlock()
	return l, nil
}

// Close ends the listener.
func (l *Listener) Close() {
	l.hub.mu.Lock()
	delete(l.hub.listeners, l)
	l.hub.mu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.closed = true
		close(l.c)
	}
	l.hub.outMu.Lock()
	var pending []string
	for eventID, byListener := range l.hub.outcomes {
		if byListener[l.ID].Status == TargetPending {
			pending = append(pending, eventID)
		}
	}
	l.hub.outMu.Unlock()
	for _, eventID := range pending {
		l.hub.setOutcome(eventID, l.target(TargetFailed, "the listen stopped before it reported"))
	}
}

// Count returns how many listeners there are.
func (h *Hub) Count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.listeners)
}

// CloseAll ends every listener (the server is stopping).
func (h *Hub) CloseAll() {
	h.mu.Lock()
	ls := slices.Collect(maps.Keys(h.listeners))
	h.mu.Unlock()
	for _, l := range ls {
		l.Close()
	}
}

// Notify sends the listeners the events recorded since they last looked.
// The local server calls it after every notification it accepted and
// every admin command.
func (h *Hub) Notify(ctx context.Context) {
	h.notifyMu.Lock()
	defer h.notifyMu.Unlock()
	h.mu.Lock()
	byMerchant := map[string][]*Listener{}
	for l := range h.listeners {
		byMerchant[l.MerchantID] = append(byMerchant[l.MerchantID], l)
	}
	h.mu.Unlock()
	for merchantID, ls := range byMerchant {
		events, err := h.local.Events(ctx, merchantID, "", 100)
		if err != nil {
			continue // the next notification looks again
		}
		slices.Reverse(events) // oldest first
		for _, l := range ls {
			l.send(events, h.local.Clock.Now())
		}
	}
}

// send passes on the events l has not seen.
func (l *Listener) send(events []Event, now time.Time) {
	missed := 0
	for _, e := range events {
		if l.seen[e.ID] {
			continue
		}
		l.seen[e.ID] = true
		if len(l.codes) > 0 && !slices.Contains(l.codes, e.EventCode) {
			continue
		}
		id := "msg_listen_" + strings.TrimPrefix(e.ID, "evt_")
		sig, err := webhooks.Sign([]string{l.Secret}, id, now, e.Payload)
		if err != nil {
			continue
		}
		wh := Webhook{
			EventID: e.ID, EventCode: e.EventCode, PSPReference: e.PSPReference, Body: e.Payload, Missed: missed,
			Headers: sender.Headers(webhooks.Request{ID: id, Attempt: 1, Timestamp: now, Signature: sig, Body: e.Payload}),
		}
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			return
		}
		l.hub.setOutcome(e.ID, l.target(TargetPending, "sent to the listen; no report from it yet")) // before its report can come
		select {
		case l.c <- wh:
			missed = 0
		default:
			missed++
			l.hub.setOutcome(e.ID, l.target(TargetFailed, "this listen fell behind: the webhook was dropped"))
		}
		l.mu.Unlock()
	}
}

// target is what became of an event sent to l.
func (l *Listener) target(status, detail string) Target {
	to := l.To
	if to == "" {
		to = "printed by paysvc-admin listen"
	}
	return Target{Kind: "listener", ID: l.ID, To: to, Status: status, Detail: detail}
}

// setOutcome records t for event eventID.
func (h *Hub) setOutcome(eventID string, t Target) {
	h.outMu.Lock()
	defer h.outMu.Unlock()
	byListener := h.outcomes[eventID]
	if byListener == nil {
		byListener = map[string]Target{}
		h.outcomes[eventID] = byListener
		h.outOrder = append(h.outOrder, eventID)
		if len(h.outOrder) > listenOutcomes {
			delete(h.outcomes, h.outOrder[0])
			h.outOrder = h.outOrder[1:]
		}
	}
	byListener[t.ID] = t
	close(h.changed)
	h.changed = make(chan struct{})
}

// ListenReport is what a listen's CLI says became of one webhook (POST
// /_admin/v1/listen/report).
type ListenReport struct {
	ListenerID string `json:"listenerId"`
	EventID    string `json:"eventId"`
	Delivered  bool   `json:"delivered"`
	// Detail says how (the receiver's status, printed) or why not.
	Detail string `json:"detail"`
}

// Report records a listen's report on an event sent to it; reports on
// events it was not sent are ignored.
func (h *Hub) Report(r ListenReport) {
	h.outMu.Lock()
	t, ok := h.outcomes[r.EventID][r.ListenerID]
	h.outMu.Unlock()
	if !ok {
		return
	}
	t.Status, t.Detail = TargetFailed, r.Detail
	if r.Delivered {
		t.Status = TargetDelivered
	}
	h.setOutcome(r.EventID, t)
}

// listenTargets returns what became of event eventID at its listeners,
// and a channel closed when that changes.
func (h *Hub) listenTargets(eventID string) ([]Target, <-chan struct{}) {
	h.outMu.Lock()
	defer h.outMu.Unlock()
	out := slices.SortedFunc(maps.Values(h.outcomes[eventID]), func(a, b Target) int { return strings.Compare(a.ID, b.ID) })
	return out, h.changed
}

// Wrap calls Notify after each notification next accepted.
func (h *Hub) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &httpapi.StatusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		if r.Method == http.MethodPost && r.URL.Path == httpapi.NotificationsPath && sw.Status == http.StatusOK && h.Count() > 0 {
			h.Notify(context.WithoutCancel(r.Context()))
		}
	})
}
