package simulator

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strconv"
	"strings"

	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/upstream"
)

// orderIn is what /payments and /sessions requests share.
type orderIn struct {
	MerchantAccount          string            `json:"merchantAccount"`
	Amount                   *amountIn         `json:"amount"`
	Reference                string            `json:"reference"`
	ReturnURL                string            `json:"returnUrl"`
	CountryCode              string            `json:"countryCode"`
	ShopperInteraction       string            `json:"shopperInteraction"`
	ShopperReference         string            `json:"shopperReference"`
	RecurringProcessingModel string            `json:"recurringProcessingModel"`
	Splits                   []splitIn         `json:"splits"`
	Metadata                 map[string]string `json:"metadata"`
	// AdditionalData values are strings, but the platform's own examples
	// send RequestedTestAcquirerResponseCode as a number.
	AdditionalData     map[string]json.RawMessage `json:"additionalData"`
	CaptureDelayHours  *int                       `json:"captureDelayHours"`
	StorePaymentMethod *bool                      `json:"storePaymentMethod"`
	ShopperName        *nameIn                    `json:"shopperName"`
}

// checkOrder validates the amount, merchant account, reference, returnUrl,
// metadata and splits of an order, in this order.
func (s *Simulator) checkOrder(in *orderIn) (money.Amount, []upstream.Split, *apiError) {
	amount, e := checkAmount(in.Amount, true)
	if e != nil {
		return amount, nil, e
	}
	for _, e := range []*apiError{s.checkMerchant(in.MerchantAccount), checkReference(in.Reference), checkReturnURL(in.ReturnURL), checkMetadata(in.Metadata)} {
		if e != nil {
			return amount, nil, e
		}
	}
	splits, e := checkSplits(in.Splits, amount)
	return amount, splits, e
}

// paymentsIn is the part of a /payments request the simulator reads.
type paymentsIn struct {
	orderIn
	IndustryUsage      string          `json:"industryUsage"`
	PaymentMethod      json.RawMessage `json:"paymentMethod"`
	AuthenticationData *struct {
		ThreeDSRequestData *struct {
			NativeThreeDS string `json:"nativeThreeDS"`
		} `json:"threeDSRequestData"`
	} `json:"authenticationData"`
}

// nameIn is a shopperName as received.
type nameIn struct {
	FirstName string `json:"firstName"`
	LastName  string `json:"lastName"`
}

// checkShopperName applies the platform's rule that a shopperName has
// both names.
func checkShopperName(n *nameIn) *apiError {
	if n == nil {
		return nil
	}
	if strings.TrimSpace(n.FirstName) == "" {
		return validationError(codeGeneric, "Required field 'shopperName.firstName' is not provided.")
	}
	if strings.TrimSpace(n.LastName) == "" {
		return validationError(codeGeneric, "Required field 'shopperName.lastName' is not provided.")
	}
	return nil
}

// additionalString reads an additionalData value sent as a string or a
// number.
func additionalString(ad map[string]json.RawMessage, key string) string {
	raw, ok := ad[key]
	if !ok {
		return ""
	}
	var v string
	if json.Unmarshal(raw, &v) == nil {
		return v
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}

// paymentMethodIn is the part of paymentMethod the simulator reads.
type paymentMethodIn struct {
	Type                     string `json:"type"`
	EncryptedCardNumber      string `json:"encryptedCardNumber"`
	EncryptedExpiryMonth     string `json:"encryptedExpiryMonth"`
	EncryptedExpiryYear      string `json:"encryptedExpiryYear"`
	EncryptedSecurityCode    string `json:"encryptedSecurityCode"`
	Number                   string `json:"number"`
	ExpiryMonth              string `json:"expiryMonth"`
	ExpiryYear               string `json:"expiryYear"`
	CVC                      string `json:"cvc"`
	HolderName               string `json:"holderName"`
	StoredPaymentMethodID    string `json:"storedPaymentMethodId"`
	RecurringDetailReference string `json:"recurringDetailReference"`
}

// authReq is what an authorisation needs, from /payments or a session.
type authReq struct {
	merchantAccount    string
	reference          string
	returnURL          string
	shopperReference   string
	shopperInteraction string
	recurringModel     string
	amount             money.Amount
	metadata           map[string]string
	splits             []upstream.Split
	store              bool
	sessionID          string
	raw                json.RawMessage
	nativeThreeDS      bool
	preAuth            bool
	acquirerCode       string // additionalData.RequestedTestAcquirerResponseCode
	capture            captureAsk
}

// captureAsk is what a request says of capture: manual
// (additionalData.manualCapture "true", v71 AdditionalDataCommon), a delay
// (captureDelayHours, v71: 0 captures at authorisation, at most 672), or
// nothing, and then the merchant account's default decides
// (Options.ManualCaptureAccounts; the platform's own default is immediate
// capture).
type captureAsk struct {
	manual bool
	delay  *int
}

// readCaptureAsk reads and checks a request's capture fields.
func readCaptureAsk(ad map[string]json.RawMessage, delay *int) (captureAsk, *apiError) {
	if delay != nil && (*delay < 0 || *delay > 672) {
		return captureAsk{}, validationError(codeGeneric, "Field 'captureDelayHours' must be between 0 and 672.")
	}
	return captureAsk{manual: strings.EqualFold(additionalString(ad, upstream.AdditionalManualCapture), "true"), delay: delay}, nil
}

// capturedAtAuthorisation decides, for a payment of merchant account
// account, whether its authorisation is captured at once: never the
// service's configuration, only what the request says, else the account's
// default. A delay above 0 is held like a manual capture (the simulator
// performs no delayed capture).
func (s *Simulator) capturedAtAuthorisation(account string, ask captureAsk) bool {
	switch {
	case ask.manual:
		return false
	case ask.delay != nil:
		return *ask.delay == 0
	}
	return !s.manualCapture[account]
}

// plan is the decided behaviour of an authorisation.
type plan struct {
	behaviour Behaviour
	method    string // paymentMethod.type
	card      *card
	forced    *HolderNameOutcome
}

func (s *Simulator) handlePayments(ctx context.Context, c *call) result {
	var in paymentsIn
	if e := decodeJSON(c.body, &in); e != nil {
		return errorResult(e)
	}
	req, e := s.paymentsRequest(&in, c.body)
	if e != nil {
		return errorResult(e)
	}
	var pm paymentMethodIn
	if len(in.PaymentMethod) == 0 || string(in.PaymentMethod) == "null" {
		return errorResult(validationError(codeUnsupportedPM, "Required object 'paymentMethod' is not provided."))
	}
	if err := unmarshal(in.PaymentMethod, &pm); err != nil {
		return errorResult(errParse("paymentMethod must be an object"))
	}
	s.mu.Lock()
	pl, e := s.plan(pm, req)
	s.mu.Unlock()
	if e != nil {
		return errorResult(e)
	}
	switch pl.behaviour {
	case Fail500:
		return errorResult(errInternal())
	case Hang:
		// Hold the request until the client gives up, then process it as the
		// upstream would have: the answer is kept for idempotent replays.
		if h := s.opts.hooks.holding; h != nil {
			h("payments")
		}
		_ = sleep(ctx, s.opts.HangTimeout)
		pl.behaviour = Authorise
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.newPayment(req, pl)
	return jsonResult(http.StatusOK, s.start(p, pl, c.public))
}

// paymentsRequest validates a /payments request.
func (s *Simulator) paymentsRequest(in *paymentsIn, raw []byte) (authReq, *apiError) {
	amount, splits, e := s.checkOrder(&in.orderIn)
	if e != nil {
		return authReq{}, e
	}
	if in.ShopperInteraction == upstream.ShopperInteractionContAuth {
		if in.ShopperReference == "" {
			return authReq{}, validationError(codeGeneric, "Recurring payments require a shopperReference")
		}
		if in.RecurringProcessingModel == "" {
			return authReq{}, validationError(codeGeneric, "Required field 'recurringProcessingModel' is not provided.")
		}
	}
	store := in.StorePaymentMethod != nil && *in.StorePaymentMethod
	if store && in.ShopperReference == "" {
		return authReq{}, validationError(codeGeneric, "Recurring payments require a shopperReference")
	}
	if s.opts.PlatformRules {
		if e := checkShopperName(in.ShopperName); e != nil {
			return authReq{}, e
		}
		if store && in.RecurringProcessingModel == "" {
			return authReq{}, validationError(codeGeneric, "Required field 'recurringProcessingModel' is not provided: storing a payment method needs it.")
		}
	}
	capture, e := readCaptureAsk(in.AdditionalData, in.CaptureDelayHours)
	if e != nil {
		return authReq{}, e
	}
	native := in.AuthenticationData != nil && in.AuthenticationData.ThreeDSRequestData != nil &&
		in.AuthenticationData.ThreeDSRequestData.NativeThreeDS == "preferred"
	return authReq{
		merchantAccount: in.MerchantAccount, reference: in.Reference, returnURL: in.ReturnURL,
		shopperReference: in.ShopperReference, shopperInteraction: in.ShopperInteraction,
		recurringModel: in.RecurringProcessingModel, amount: amount, metadata: in.Metadata,
		splits: splits, store: store, raw: raw, nativeThreeDS: native,
		preAuth:      additionalString(in.AdditionalData, "authorisationType") == "PreAuth",
		acquirerCode: additionalString(in.AdditionalData, "RequestedTestAcquirerResponseCode"),
		capture:      capture,
	}, nil
}

// isRedirectMethod reports whether a non-card method is answered with a
// redirect action.
func isRedirectMethod(t string) bool {
	switch t {
	case "ideal", "paypal", "klarna", "klarna_paynow", "klarna_account", "bcmc", "bcmc_mobile", "twint", "swish", "blik", "mobilepay", "trustly", "eps", "giropay", "vipps":
		return true
	}
	return false
}

// isImmediateMethod reports whether a non-card method is authorised at once.
func isImmediateMethod(t string) bool {
	switch t {
	case "applepay", "googlepay", "paywithgoogle", "sepadirectdebit", "directdebit_GB", "ach":
		return true
	}
	return false
}

// plan decides what an authorisation does (caller holds s.mu).
func (s *Simulator) plan(pm paymentMethodIn, req authReq) (plan, *apiError) {
	// Stored payment method (token).
	if id := cmp.Or(pm.StoredPaymentMethodID, pm.RecurringDetailReference); id != "" {
		if req.shopperReference == "" {
			return plan{}, validationError(codeGeneric, "Recurring payments require a shopperReference")
		}
		tok := s.findToken(req.merchantAccount, req.shopperReference, id)
		if tok == nil {
			return plan{}, validationError(codeContractMissing, "Contract not found")
		}
		cd := tok.Card
		pl := plan{behaviour: Authorise, method: "scheme", card: &cd}
		if o, ok := lookupHolderName(cd.HolderName); ok {
			pl.forced = &o
			pl.behaviour = o.Behaviour
		}
		if req.shopperInteraction != upstream.ShopperInteractionContAuth {
			if tc, ok := lookupCard(cd.Number); ok && (tc.Behaviour == Challenge || tc.Behaviour == Redirect || tc.Behaviour == Frictionless) {
				pl.behaviour = tc.Behaviour
			}
		}
		return pl, nil
	}

	typ := pm.Type
	if typ == "" && (pm.EncryptedCardNumber != "" || pm.Number != "") {
		typ = "scheme"
	}
	switch {
	case typ == "scheme" || typ == "card":
		pl, e := s.planCard(pm)
		if e == nil && pl.forced == nil {
			if o, ok := lookupAcquirerCode(req.acquirerCode); ok {
				pl.forced = &o
				if pl.behaviour == Authorise || pl.behaviour == Refuse {
					pl.behaviour = o.Behaviour
				}
			}
		}
		return pl, e
	case typ == "":
		return plan{}, validationError(codeUnsupportedPM, "Required field 'paymentMethod.type' is not provided.")
	case isRedirectMethod(typ):
		return plan{behaviour: Redirect, method: typ}, nil
	case isImmediateMethod(typ):
		return plan{behaviour: Authorise, method: typ}, nil
	}
	return plan{}, validationError(codeUnsupportedPM, "Payment details are not supported")
}

// planCard validates card data and decides the card's behaviour.
func (s *Simulator) planCard(pm paymentMethodIn) (plan, *apiError) {
	number, e := testValue(pm.EncryptedCardNumber, pm.Number)
	if e != nil {
		return plan{}, e
	}
	number = strings.ReplaceAll(number, " ", "")
	if !onlyDigits(number) || len(number) < 12 || len(number) > 19 || !luhnValid(number) {
		return plan{}, validationError(codeInvalidCard, "Invalid card number")
	}
	month, e := testValue(pm.EncryptedExpiryMonth, pm.ExpiryMonth)
	if e != nil {
		return plan{}, e
	}
	year, e := testValue(pm.EncryptedExpiryYear, pm.ExpiryYear)
	if e != nil {
		return plan{}, e
	}
	m, errM := strconv.Atoi(month)
	y, errY := strconv.Atoi(year)
	if errM != nil || errY != nil || m < 1 || m > 12 || (len(year) != 4 && len(year) != 2) {
		return plan{}, validationError(codeExpiryInvalid, "Expiry Date Invalid")
	}
	if len(year) == 2 {
		y += 2000
	}
	cvc, e := testValue(pm.EncryptedSecurityCode, pm.CVC)
	if e != nil {
		return plan{}, e
	}
	if cvc != "" && (!onlyDigits(cvc) || len(cvc) < 3 || len(cvc) > 4) {
		return plan{}, validationError(codeCVCLength, "CVC is not the right length")
	}
	cd := &card{Number: number, ExpiryMonth: fmt.Sprintf("%02d", m), ExpiryYear: strconv.Itoa(y), HolderName: pm.HolderName, Brand: brandOf(number)}
	pl := plan{behaviour: Authorise, method: "scheme", card: cd}

	tc, known := lookupCard(number)
	forced, hasForced := lookupHolderName(pm.HolderName)
	if known && cvc != "" && tc.CVC != "" && cvc != tc.CVC {
		// As the platform documents: a wrong CVC fails the payment with the
		// generic DECLINED refusal, whatever the holder name asks for.
		forced, hasForced = lookupHolderName("DECLINED")
	}
	if hasForced {
		pl.forced = &forced
	}
	switch {
	case known && (tc.Behaviour == Fail500 || tc.Behaviour == Hang):
		pl.behaviour = tc.Behaviour
	case hasForced && (forced.Behaviour == Fail500 || forced.Behaviour == Hang):
		pl.behaviour = forced.Behaviour
	case known && (tc.Behaviour == Challenge || tc.Behaviour == Redirect || tc.Behaviour == Frictionless):
		pl.behaviour = tc.Behaviour // the forced outcome applies after the action
	case hasForced:
		pl.behaviour = forced.Behaviour
	}
	// An expired card is refused (after any action) unless an outcome is forced.
	now := s.clock.Now()
	if !hasForced && (y < now.Year() || y == now.Year() && m < int(now.Month())) {
		o, _ := lookupHolderName("CARD_EXPIRED")
		pl.forced = &o
		if pl.behaviour == Authorise {
			pl.behaviour = Refuse
		}
	}
	return pl, nil
}

// testValue returns the plain value of a field given either encrypted (it
// must carry the "test_" prefix of unencrypted test data) or plain.
func testValue(encrypted, plain string) (string, *apiError) {
	if encrypted != "" {
		v, ok := strings.CutPrefix(encrypted, "test_")
		if !ok {
			return "", validationError(codeDecrypt, "Unable to decrypt data")
		}
		return v, nil
	}
	return plain, nil
}

// cardFields are the members of a paymentMethod that hold card data.
var cardFields = []string{"encryptedCardNumber", "encryptedExpiryMonth", "encryptedExpiryYear", "encryptedSecurityCode",
	"number", "expiryMonth", "expiryYear", "cvc"}

// withoutCardData returns a /payments request body with the values of its
// paymentMethod's card fields replaced by "[redacted]": the payment keeps
// (and GET /_sim/payments/{psp} shows) its request as the logs would,
// never its card.
func withoutCardData(raw json.RawMessage) json.RawMessage {
	var req, pm map[string]json.RawMessage
	if json.Unmarshal(raw, &req) != nil || json.Unmarshal(req["paymentMethod"], &pm) != nil {
		return raw
	}
	found := false
	for _, f := range cardFields {
		if _, ok := pm[f]; ok {
			pm[f], found = json.RawMessage(`"[redacted]"`), true
		}
	}
	if !found {
		return raw
	}
	// Members decoded as JSON values always encode again.
	req["paymentMethod"], _ = json.Marshal(pm)
	b, _ := json.Marshal(req)
	return b
}

// newPayment records a payment for req (caller holds s.mu).
func (s *Simulator) newPayment(req authReq, pl plan) *payment {
	p := &payment{
		PSP: s.uniquePSP(), MerchantAccount: req.merchantAccount, Reference: req.reference,
		Amount: req.amount, MethodType: pl.method, Card: pl.card, ShopperReference: req.shopperReference,
		ShopperInteraction: cmp.Or(req.shopperInteraction, upstream.ShopperInteractionEcommerce),
		RecurringModel:     req.recurringModel, Metadata: maps.Clone(req.metadata), Splits: req.splits,
		ReturnURL: req.returnURL, SessionID: req.sessionID, StoreRequested: req.store,
		Forced: pl.forced, Request: withoutCardData(req.raw), CreatedAt: s.clock.Now(),
		Frictionless: pl.behaviour == Frictionless, NativeThreeDS: req.nativeThreeDS, PreAuth: req.preAuth,
		AutoCapture: s.capturedAtAuthorisation(req.merchantAccount, req.capture),
	}
	if pl.forced != nil {
		p.CaptureFails, p.RefundFails = pl.forced.CaptureFails, pl.forced.RefundFails
	}
	s.payments[p.PSP] = p
	s.paymentOrder = append(s.paymentOrder, p.PSP)
	return p
}

// start moves a new payment to its first state and returns the response
// (caller holds s.mu).
func (s *Simulator) start(p *payment, pl plan, public string) paymentResponseOut {
	kind := ""
	switch {
	case pl.behaviour == Redirect:
		kind = "redirect"
	case (pl.behaviour == Challenge || pl.behaviour == Frictionless) && s.opts.WebThreeDS2:
		kind = "redirect"
		if p.NativeThreeDS {
			kind = "fingerprint"
			if challengeOnly(p) {
				kind = "threeDS2" // the challenge-only card skips the fingerprint
			}
		}
	case pl.behaviour == Challenge:
		kind = "threeDS2"
	}
	if kind == "" { // Authorise, Frictionless (without WebThreeDS2), Refuse, Receive, Pend
		s.settle(p, outcomeOf(pl.forced, true))
		return s.paymentResponse(p, false)
	}
	return s.actionResponse(p, s.newAction(p, kind), public)
}

// challengeOnly reports whether p is paid with the challenge-only test card.
func challengeOnly(p *payment) bool {
	if p.Card == nil {
		return false
	}
	tc, ok := lookupCard(p.Card.Number)
	return ok && tc.ChallengeOnly
}

// actionResponse moves p to the state of act and answers with the action
// (caller holds s.mu).
func (s *Simulator) actionResponse(p *payment, act *action, public string) paymentResponseOut {
	switch act.Kind {
	case "fingerprint":
		p.State = StateIdentifyShopper
	case "threeDS2":
		p.State = StateChallengeShopper
	default:
		p.State = StateRedirectShopper
	}
	p.ResultCode = p.State
	out := s.paymentResponse(p, false)
	if s.opts.PublishedShapes {
		out = paymentResponseOut{ResultCode: p.ResultCode}
	}
	out.Action = actionJSON(act, p, public)
	return out
}

// outcome is a final (or pending) result of an authorisation.
type outcome struct {
	resultCode, reason, reasonCode string
}

// outcomeOf returns the outcome of a forced row, or Authorised without one.
// With ok false (a failed action) it returns the action's failure.
func outcomeOf(forced *HolderNameOutcome, ok bool) outcome {
	if !ok {
		return outcome{upstream.ResultRefused, "3D Not Authenticated", "11"}
	}
	if forced == nil || forced.ResultCode == "" {
		return outcome{resultCode: upstream.ResultAuthorised}
	}
	return outcome{forced.ResultCode, forced.RefusalReason, forced.RefusalReasonCode}
}

// settle applies an outcome: state, auto-capture, tokenisation and the
// AUTHORISATION notification (caller holds s.mu).
func (s *Simulator) settle(p *payment, o outcome) {
	p.ResultCode, p.State = o.resultCode, o.resultCode // StateAuthorised is ResultAuthorised
	p.PendingActionID = ""
	switch o.resultCode {
	case upstream.ResultAuthorised:
		p.Authorised = p.Amount.Value
		if p.AutoCapture {
			p.Captured = p.Authorised
			p.State = StateCaptured
		}
		s.tokenise(p)
		s.emitAuthorisation(p, true, "")
	case upstream.ResultReceived, upstream.ResultPending:
	default:
		p.RefusalReason, p.RefusalReasonCode = o.reason, o.reasonCode
		s.emitAuthorisation(p, false, o.reason)
	}
}

// tokenise stores the card of an authorised payment when storing was asked
// (caller holds s.mu).
func (s *Simulator) tokenise(p *payment) {
	if !p.StoreRequested || p.ShopperReference == "" || p.Card == nil {
		return
	}
	k := tokenKey{p.MerchantAccount, p.ShopperReference}
	for _, t := range s.tokens[k] {
		if t.Card.Number == p.Card.Number && t.Card.ExpiryMonth == p.Card.ExpiryMonth && t.Card.ExpiryYear == p.Card.ExpiryYear {
			p.StoredID, p.TokenCreated = t.ID, false
			return
		}
	}
	t := &storedMethod{
		ID: s.ids.psp(), MerchantAccount: p.MerchantAccount, ShopperReference: p.ShopperReference,
		Card: *p.Card, RecurringModel: p.RecurringModel, CreatedAt: s.clock.Now(),
	}
	s.tokens[k] = append(s.tokens[k], t)
	p.StoredID, p.TokenCreated = t.ID, true
}

// tokenData is the tokenisation additionalData of a payment.
func tokenData(p *payment) map[string]string {
	if p.StoredID == "" {
		return nil
	}
	op := "created"
	if !p.TokenCreated {
		op = "alreadyExisting"
	}
	m := map[string]string{
		upstream.KeyStoredPaymentMethodID:    p.StoredID,
		"tokenization.shopperReference":      p.ShopperReference,
		"tokenization.store.operationType":   op,
		upstream.KeyRecurringDetailReference: p.StoredID,
		"recurring.shopperReference":         p.ShopperReference,
	}
	if p.RecurringModel != "" {
		m["recurringProcessingModel"] = p.RecurringModel
	}
	return m
}

// paymentResponseOut is the JSON answer of /payments and /payments/details.
type paymentResponseOut struct {
	AdditionalData    map[string]string `json:"additionalData,omitempty"`
	Action            *actionOut        `json:"action,omitempty"`
	Amount            *money.Amount     `json:"amount,omitempty"`
	MerchantReference string            `json:"merchantReference,omitempty"`
	PaymentMethod     *methodOut        `json:"paymentMethod,omitempty"`
	PSPReference      string            `json:"pspReference,omitempty"`
	RefusalReason     string            `json:"refusalReason,omitempty"`
	RefusalReasonCode string            `json:"refusalReasonCode,omitempty"`
	ResultCode        string            `json:"resultCode"`
}

type methodOut struct {
	Brand string `json:"brand,omitempty"`
	Type  string `json:"type"`
}

// paymentResponse is the answer with p's result; details marks a
// /payments/details answer (minimal with PublishedShapes).
func (s *Simulator) paymentResponse(p *payment, details bool) paymentResponseOut {
	out := paymentResponseOut{
		PSPReference: p.PSP, ResultCode: p.ResultCode, RefusalReason: p.RefusalReason, RefusalReasonCode: p.RefusalReasonCode,
	}
	if p.ResultCode == upstream.ResultAuthorised {
		out.AdditionalData = tokenData(p)
	}
	if details && s.opts.PublishedShapes {
		return out
	}
	amount := p.Amount
	out.Amount, out.MerchantReference, out.PaymentMethod = &amount, p.Reference, &methodOut{Type: p.MethodType}
	if p.Card != nil {
		out.PaymentMethod.Brand = p.Card.Brand
	}
	return out
}

// cardExpiry formats a card's expiry as the upstream does in notifications.
func cardExpiry(c *card) string { return c.ExpiryMonth + "/" + c.ExpiryYear }
