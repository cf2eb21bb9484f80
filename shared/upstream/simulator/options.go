package simulator

import (
	"io"
	"log/slog"
	"time"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/upstream"
)

// Defaults applied by New to zero Options fields.
const (
	DefaultBasePath    = "/v71"
	DefaultHangTimeout = 60 * time.Second
	DefaultSessionTTL  = time.Hour
	DefaultOfferTTL    = 12 * time.Hour
	// IdempotencyRetention is how long a completed Idempotency-Key is
	// remembered (the upstream keeps keys at least 31 days).
	IdempotencyRetention = 31 * 24 * time.Hour
)

// Options configure a Simulator. The zero value works: any non-empty API key
// is accepted, notifications are unsigned and only recorded.
type Options struct {
	// APIKey is the expected X-API-Key. Empty accepts any non-empty key.
	APIKey string
	// HMACKeyHex signs notifications (additionalData.hmacSignature). Empty
	// leaves them unsigned.
	HMACKeyHex string
	// BasePath prefixes the API routes; default "/v71". Use
	// "/checkout/v71" to mimic the live URL layout.
	BasePath string
	// PublicURL is the absolute URL at which the simulator is reachable
	// (e.g. "http://127.0.0.1:8081"), used in redirect and hosted-checkout
	// URLs. Empty derives it from each request's Host.
	PublicURL string
	// MerchantAccounts, when non-empty, are the only merchant accounts
	// accepted (others get 403 "901 Invalid Merchant Account").
	MerchantAccounts []string
	// ManualCaptureAccounts are merchant accounts whose default is manual
	// capture: their payments are captured at authorisation only when the
	// request asks (captureDelayHours 0). Every other account's default is
	// the platform's, immediate capture; a request's
	// additionalData.manualCapture "true" holds the payment for capture.
	ManualCaptureAccounts []string
	// MultiplePartialCaptureAccounts are merchant accounts with multiple
	// partial captures enabled (the platform enables it on request; no
	// request states it): their captures continue up to the authorised
	// amount. On every other account a capture releases the rest of the
	// authorisation and a later capture is refused (Checkout v71, captures).
	MultiplePartialCaptureAccounts []string
	// Latency is added to every API request (for benchmarks).
	Latency time.Duration
	// HangTimeout bounds how long the "hang" test card holds a request when
	// the client does not give up first; default 60 s.
	HangTimeout time.Duration
	// SessionTTL is a session's lifetime; default one hour.
	SessionTTL time.Duration
	// OfferTTL is how long an unfinished redirect/challenge stays open before
	// ExpireOffers closes it (OFFER_CLOSED); default 12 h.
	OfferTTL time.Duration
	// Live sets "live":"true" in notifications (default "false").
	Live bool
	// StrictIdempotency rejects a reused Idempotency-Key whose request
	// (method, path, body) differs with 422. The real upstream replays the
	// first response regardless; strict mode surfaces key-derivation bugs.
	StrictIdempotency bool
	// AsyncModificationFailures answers modifications the state machine
	// rejects (over-capture, capture of a cancelled payment, …) with 201
	// "received" followed by a notification with success "false", instead
	// of a synchronous 422.
	AsyncModificationFailures bool
	// PublishedShapes answers exactly like the platform's published
	// examples: an answer with an action (IdentifyShopper, ChallengeShopper,
	// RedirectShopper) carries resultCode and action only (no pspReference,
	// amount or merchantReference), and a /payments/details answer carries
	// resultCode and pspReference (plus refusal reason and tokenisation
	// data when there are any). Off, both answers also echo pspReference,
	// amount, merchantReference and paymentMethod.
	PublishedShapes bool
	// WebThreeDS2 runs 3-D Secure 2 as the platform does on the web: with
	// authenticationData.threeDSRequestData.nativeThreeDS "preferred" an
	// IdentifyShopper answer with a threeDS2 fingerprint action, then (after
	// /payments/details) a ChallengeShopper answer with a threeDS2 challenge
	// action, or the result at once for a frictionless card; without it a
	// RedirectShopper answer with a redirect action to the 3DS page. Off, a
	// challenge card answers ChallengeShopper at once and a frictionless
	// card is authorised at once.
	WebThreeDS2 bool
	// PlatformRules enforces rules the platform applies with a 422:
	// shopperName needs firstName and lastName; storing a card
	// (storePaymentMethod true, storePaymentMethodMode enabled) needs
	// recurringProcessingModel; an amount update applies only to a payment
	// authorised with additionalData.authorisationType "PreAuth".
	PlatformRules bool
	// StateFile, when set, is a JSON file the simulator keeps its state in
	// (payments, sessions, open actions, stored cards, Idempotency-Keys and
	// the AdvanceClock offset): loaded by New, written after every request
	// that changes it, so links to its pages and open challenges survive a
	// restart. Emitted notifications and queued deliveries are not kept.
	StateFile string
	// Notifier receives each notification body (one item per call). Nil
	// records notifications without delivering them.
	Notifier Notifier
	// Faults inject delivery faults (duplicates, reordering, delay, drops).
	Faults Faults
	// Clock tells the time; default clock.System.
	Clock clock.Clock
	// Rand is the source of pspReferences and ids; default crypto/rand.
	// Inject a seeded reader for reproducible references.
	Rand io.Reader
	// Logger receives request and delivery logs; default discards. Secrets
	// (API key, HMAC key, basic-auth password) are never logged.
	Logger *slog.Logger

	// hooks let this package's tests wait for what no API shows.
	hooks testHooks
}

// testHooks are called at points of a request's life that tests wait for,
// instead of polling; nil fields (always, outside this package's tests) do
// nothing.
type testHooks struct {
	// holding is called when a request starts being held until its client
	// gives up (the Hang behaviour, after its Idempotency-Key is registered,
	// or an injected FailTimeout), with the request's endpoint.
	holding func(endpoint string)
	// keySettled is called once a request with an Idempotency-Key has
	// finished with it: its answer is kept for replays, or the key was
	// released (a 5xx, a panic).
	keySettled func(key string)
	// delivered is called once a notification's delivery attempt is
	// counted in NotificationStats (sent, failed or abandoned at Close).
	delivered func()
}

// Faults inject notification delivery faults. The zero value injects none.
type Faults struct {
	// Duplicate sends every notification this many extra times.
	Duplicate int
	// Reorder holds notifications until this many are waiting and then sends
	// them in reverse order; Flush releases a partial batch (also reversed).
	// Values below 2 disable reordering.
	Reorder int
	// Delay waits this long before each delivery.
	Delay time.Duration
	// DropEvery drops every n-th notification (1 drops all).
	DropEvery int
	// Drop, when set, drops the notifications for which it returns true.
	// It runs while the simulator's state is locked: it must not call the
	// Simulator.
	Drop func(upstream.NotificationRequestItem) bool
}
