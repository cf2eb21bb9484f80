package simulator

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/upstream"
)

// sessionIn is the part of a /sessions request the simulator reads.
type sessionIn struct {
	orderIn
	BlockedPaymentMethods  []string     `json:"blockedPaymentMethods"`
	AllowedPaymentMethods  []string     `json:"allowedPaymentMethods"`
	LineItems              []lineItemIn `json:"lineItems"`
	ShopperLocale          string       `json:"shopperLocale"`
	StorePaymentMethodMode string       `json:"storePaymentMethodMode"`
	Mode                   string       `json:"mode"`
	ExpiresAt              *time.Time   `json:"expiresAt"`
}

type lineItemIn struct {
	Quantity *int64 `json:"quantity"`
}

// sessionOut is the 201 answer of /sessions.
type sessionOut struct {
	Amount                   money.Amount      `json:"amount"`
	BlockedPaymentMethods    []string          `json:"blockedPaymentMethods,omitempty"`
	CountryCode              string            `json:"countryCode,omitempty"`
	ExpiresAt                string            `json:"expiresAt"`
	ID                       string            `json:"id"`
	MerchantAccount          string            `json:"merchantAccount"`
	Metadata                 map[string]string `json:"metadata,omitempty"`
	Mode                     string            `json:"mode"`
	RecurringProcessingModel string            `json:"recurringProcessingModel,omitempty"`
	Reference                string            `json:"reference"`
	ReturnURL                string            `json:"returnUrl"`
	SessionData              string            `json:"sessionData"`
	ShopperInteraction       string            `json:"shopperInteraction,omitempty"`
	ShopperLocale            string            `json:"shopperLocale,omitempty"`
	ShopperReference         string            `json:"shopperReference,omitempty"`
	StorePaymentMethodMode   string            `json:"storePaymentMethodMode,omitempty"`
	URL                      string            `json:"url,omitempty"`
}

func (s *Simulator) handleSessions(_ context.Context, c *call) result {
	var in sessionIn
	if e := decodeJSON(c.body, &in); e != nil {
		return errorResult(e)
	}
	amount, _, e := s.checkOrder(&in.orderIn)
	if e != nil {
		return errorResult(e)
	}
	if _, e := readCaptureAsk(in.AdditionalData, in.CaptureDelayHours); e != nil {
		return errorResult(e)
	}
	for i, li := range in.LineItems {
		if li.Quantity != nil && *li.Quantity < 1 {
			return errorResult(validationError(codeGeneric, fmt.Sprintf("Invalid lineItems[%d].quantity.", i)))
		}
	}
	if !slices.Contains([]string{"", "embedded", "hosted"}, in.Mode) {
		return errorResult(validationError(codeGeneric, "Invalid mode: "+in.Mode))
	}
	if !slices.Contains([]string{"", "askForConsent", "enabled", "disabled"}, in.StorePaymentMethodMode) {
		return errorResult(validationError(codeGeneric, "Invalid storePaymentMethodMode: "+in.StorePaymentMethodMode))
	}
	if in.ShopperReference == "" && (in.StorePaymentMethod != nil && *in.StorePaymentMethod || in.StorePaymentMethodMode == "enabled" || in.StorePaymentMethodMode == "askForConsent") {
		return errorResult(validationError(codeGeneric, "Recurring payments require a shopperReference"))
	}
	if s.opts.PlatformRules {
		if e := checkShopperName(in.ShopperName); e != nil {
			return errorResult(e)
		}
		if (in.StorePaymentMethod != nil && *in.StorePaymentMethod || in.StorePaymentMethodMode == "enabled") && in.RecurringProcessingModel == "" {
			return errorResult(validationError(codeGeneric, "Required field 'recurringProcessingModel' is not provided: storing a payment method needs it."))
		}
	}

	now := s.clock.Now()
	expires := now.Add(s.opts.SessionTTL)
	if in.ExpiresAt != nil && in.ExpiresAt.After(now) {
		expires = *in.ExpiresAt
	}
	s.mu.Lock()
	id := "CS" + s.ids.ref(16)
	for s.sessions[id] != nil {
		id = "CS" + s.ids.ref(16)
	}
	blob, _ := json.Marshal(map[string]string{"id": id, "nonce": s.ids.hex(16)})
	sess := &session{ID: id, Data: "Ab02b4c0!" + base64.StdEncoding.EncodeToString(blob), Req: in, ExpiresAt: expires, CreatedAt: now}
	s.sessions[id] = sess
	s.mu.Unlock()

	out := sessionOut{
		Amount: amount, BlockedPaymentMethods: in.BlockedPaymentMethods, CountryCode: in.CountryCode,
		ExpiresAt: expires.Format(time.RFC3339), ID: id, MerchantAccount: in.MerchantAccount, Metadata: in.Metadata,
		Mode: cmp.Or(in.Mode, "embedded"), RecurringProcessingModel: in.RecurringProcessingModel,
		Reference: in.Reference, ReturnURL: in.ReturnURL, SessionData: sess.Data, ShopperInteraction: in.ShopperInteraction,
		ShopperLocale: in.ShopperLocale, ShopperReference: in.ShopperReference, StorePaymentMethodMode: in.StorePaymentMethodMode,
	}
	if out.Mode == "hosted" {
		out.URL = c.public + "/_sim/sessions/" + id + "/hosted"
	}
	return jsonResult(http.StatusCreated, out)
}

// Errors of PaySession.
var (
	ErrSessionNotFound           = errors.New("simulator: session not found")
	ErrSessionExpired            = errors.New("simulator: session expired")
	ErrSessionCompleted          = errors.New("simulator: session already paid")
	ErrPaymentMethodNotAvailable = errors.New("simulator: payment method not available in this session")
	ErrSimulatedFailure          = errors.New("simulator: simulated upstream failure")
)

// SessionPayment is what the simulated drop-in submits for a session.
type SessionPayment struct {
	// PaymentMethodType defaults to "scheme" (card).
	PaymentMethodType string `json:"paymentMethodType,omitempty"`
	// CardNumber defaults to 4111111111111111; expiry defaults to 03/2030
	// and CVC to the test card's CVC (737 for a card not in the table).
	CardNumber  string `json:"cardNumber,omitempty"`
	ExpiryMonth string `json:"expiryMonth,omitempty"`
	ExpiryYear  string `json:"expiryYear,omitempty"`
	CVC         string `json:"cvc,omitempty"`
	// HolderName forces an outcome (holder-name table).
	HolderName string `json:"holderName,omitempty"`
	// StorePaymentMethod is the shopper's consent to store the card, used
	// when the session's storePaymentMethodMode is "askForConsent".
	StorePaymentMethod bool `json:"storePaymentMethod,omitempty"`
	// ChallengeResult completes a 3DS2 challenge or redirect the card
	// triggers; default "password" (success). "wrong" or "refused" fail it.
	ChallengeResult string `json:"challengeResult,omitempty"`
}

// SessionResult is the outcome of PaySession.
type SessionResult struct {
	PSPReference          string `json:"pspReference"`
	ResultCode            string `json:"resultCode"`
	RefusalReason         string `json:"refusalReason,omitempty"`
	StoredPaymentMethodID string `json:"storedPaymentMethodId,omitempty"`
	// SessionResult is the opaque value the drop-in hands back with the
	// session id after a redirect.
	SessionResult string `json:"sessionResult"`
}

// PaySession completes session id as the drop-in would, with a card or
// another method, and emits the AUTHORISATION notification (carrying the
// session's metadata as metadata.<key>, checkoutSessionId and, when a token
// was stored, tokenization.storedPaymentMethodId).
func (s *Simulator) PaySession(ctx context.Context, id string, sp SessionPayment) (SessionResult, error) {
	res, _, err := s.paySession(ctx, id, sp, false)
	s.persist()
	return res, err
}

// paySession is PaySession. With page (the hosted checkout page) and
// Options.WebThreeDS2, a card that needs a 3-D Secure challenge or a
// redirect is not completed: its payment waits for the shopper on the
// action's page, whose id is returned.
func (s *Simulator) paySession(ctx context.Context, id string, sp SessionPayment, page bool) (SessionResult, string, error) {
	if err := ctx.Err(); err != nil {
		return SessionResult{}, "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.sessions[id]
	if sess == nil {
		return SessionResult{}, "", ErrSessionNotFound
	}
	if !s.clock.Now().Before(sess.ExpiresAt) {
		return SessionResult{}, "", ErrSessionExpired
	}
	if sess.Completed {
		return SessionResult{}, "", ErrSessionCompleted
	}
	typ := cmp.Or(sp.PaymentMethodType, "scheme")
	if slices.Contains(sess.Req.BlockedPaymentMethods, typ) ||
		len(sess.Req.AllowedPaymentMethods) > 0 && !slices.Contains(sess.Req.AllowedPaymentMethods, typ) {
		return SessionResult{}, "", fmt.Errorf("%w: %s", ErrPaymentMethodNotAvailable, typ)
	}
	pm := paymentMethodIn{Type: typ}
	if typ == "scheme" {
		pm.Number = cmp.Or(sp.CardNumber, "4111111111111111")
		pm.ExpiryMonth = cmp.Or(sp.ExpiryMonth, "03")
		pm.ExpiryYear = cmp.Or(sp.ExpiryYear, "2030")
		cvc := "737"
		if tc, ok := lookupCard(strings.ReplaceAll(pm.Number, " ", "")); ok {
			cvc = tc.CVC // a wrong CVC would refuse the payment
		}
		pm.CVC = cmp.Or(sp.CVC, cvc)
		pm.HolderName = sp.HolderName
	}
	r := sess.Req
	amount := money.Amount{Value: *r.Amount.Value, Currency: r.Amount.Currency}
	splits, _ := checkSplits(r.Splits, amount)
	store := r.StorePaymentMethod != nil && *r.StorePaymentMethod || r.StorePaymentMethodMode == "enabled" ||
		r.StorePaymentMethodMode == "askForConsent" && sp.StorePaymentMethod
	if r.StorePaymentMethodMode == "disabled" {
		store = false
	}
	req := authReq{
		merchantAccount: r.MerchantAccount, reference: r.Reference, returnURL: r.ReturnURL,
		shopperReference: r.ShopperReference, shopperInteraction: cmp.Or(r.ShopperInteraction, upstream.ShopperInteractionEcommerce),
		recurringModel: r.RecurringProcessingModel, amount: amount, metadata: r.Metadata, splits: splits,
		store: store, sessionID: sess.ID,
	}
	req.capture, _ = readCaptureAsk(r.AdditionalData, r.CaptureDelayHours) // checked when the session was created
	pl, e := s.plan(pm, req)
	if e != nil {
		return SessionResult{}, "", e
	}
	if pl.behaviour == Fail500 || pl.behaviour == Hang {
		return SessionResult{}, "", ErrSimulatedFailure
	}
	p := s.newPayment(req, pl)
	sess.Payments = append(sess.Payments, p.PSP)
	switch pl.behaviour {
	case Challenge, Redirect:
		if page && s.opts.WebThreeDS2 {
			a := s.newAction(p, "redirect")
			p.HostedSession = true
			p.State, p.ResultCode = StateRedirectShopper, StateRedirectShopper
			return SessionResult{PSPReference: p.PSP, ResultCode: p.ResultCode}, a.ID, nil
		}
		ok := keywordSuccess(cmp.Or(sp.ChallengeResult, "password"))
		kind := "redirect"
		if pl.behaviour == Challenge {
			kind = "threeDS2"
		}
		s.finishAction(p, &action{Kind: kind}, ok)
	default:
		s.settle(p, outcomeOf(pl.forced, true))
	}
	return s.sessionResult(sess, p), "", nil
}

// sessionResult closes sess once p is authorised (or received) and returns
// the result the drop-in hands back (caller holds s.mu).
func (s *Simulator) sessionResult(sess *session, p *payment) SessionResult {
	switch p.ResultCode {
	case upstream.ResultAuthorised, upstream.ResultReceived, upstream.ResultPending:
		sess.Completed = true
	}
	blob, _ := json.Marshal(map[string]string{"id": sess.ID, "pspReference": p.PSP, "resultCode": p.ResultCode})
	return SessionResult{
		PSPReference: p.PSP, ResultCode: p.ResultCode, RefusalReason: p.RefusalReason,
		StoredPaymentMethodID: p.StoredID, SessionResult: base64.RawURLEncoding.EncodeToString(blob),
	}
}

// SessionState is a snapshot of a session.
type SessionState struct {
	ID              string       `json:"id"`
	MerchantAccount string       `json:"merchantAccount"`
	Reference       string       `json:"reference"`
	Amount          money.Amount `json:"amount"`
	ExpiresAt       time.Time    `json:"expiresAt"`
	Completed       bool         `json:"completed"`
	// Payments are the pspReferences of the attempts, oldest first.
	Payments              []string          `json:"payments"`
	BlockedPaymentMethods []string          `json:"blockedPaymentMethods,omitempty"`
	Metadata              map[string]string `json:"metadata,omitempty"`
	ShopperReference      string            `json:"shopperReference,omitempty"`
}

// Session returns a snapshot of session id.
func (s *Simulator) Session(id string) (SessionState, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.sessions[id]
	if sess == nil {
		return SessionState{}, false
	}
	return SessionState{
		ID: sess.ID, MerchantAccount: sess.Req.MerchantAccount, Reference: sess.Req.Reference,
		Amount:    money.Amount{Value: *sess.Req.Amount.Value, Currency: sess.Req.Amount.Currency},
		ExpiresAt: sess.ExpiresAt, Completed: sess.Completed, Payments: slices.Clone(sess.Payments),
		BlockedPaymentMethods: slices.Clone(sess.Req.BlockedPaymentMethods), Metadata: maps.Clone(sess.Req.Metadata),
		ShopperReference: sess.Req.ShopperReference,
	}, true
}
