package simulator

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"

	"github.com/yp/paysvc/shared/upstream"
)

// actionOut is the action object of a payment response.
type actionOut struct {
	AuthorisationToken string `json:"authorisationToken,omitempty"`
	Method             string `json:"method,omitempty"`
	PaymentData        string `json:"paymentData,omitempty"`
	PaymentMethodType  string `json:"paymentMethodType"`
	Subtype            string `json:"subtype,omitempty"`
	Token              string `json:"token,omitempty"`
	Type               string `json:"type"`
	URL                string `json:"url,omitempty"`
}

// challengeToken is the JSON inside a threeDS2 challenge action's base64
// token.
type challengeToken struct {
	AcsTransID           string `json:"acsTransID"`
	AcsURL               string `json:"acsURL"`
	MessageVersion       string `json:"messageVersion"`
	ThreeDSServerTransID string `json:"threeDSServerTransID"`
}

// fingerprintToken is the JSON inside a threeDS2 fingerprint action's
// base64 token.
type fingerprintToken struct {
	ThreeDSMessageVersion        string `json:"threeDSMessageVersion"`
	ThreeDSMethodNotificationURL string `json:"threeDSMethodNotificationURL"`
	ThreeDSMethodURL             string `json:"threeDSMethodUrl"`
	ThreeDSServerTransID         string `json:"threeDSServerTransID"`
}

// actionResult is the JSON inside a simulated threeDSResult or
// redirectResult.
type actionResult struct {
	ActionID             string `json:"actionId,omitempty"`
	ThreeDSServerTransID string `json:"threeDSServerTransID,omitempty"`
	TransStatus          string `json:"transStatus,omitempty"`
	Result               string `json:"result,omitempty"`
}

// newAction registers an outstanding action of p (caller holds s.mu).
func (s *Simulator) newAction(p *payment, kind string) *action {
	id := s.ids.hex(12)
	s.actionSeq++
	a := &action{
		ID: id, PSP: p.PSP, Kind: kind, CreatedAt: s.clock.Now(), Seq: s.actionSeq,
		PaymentData: "Ab02b4c0!" + base64.StdEncoding.EncodeToString([]byte("sim:"+id)),
	}
	s.actions[id] = a
	s.actionsByData[a.PaymentData] = a
	p.PendingActionID = id
	return a
}

// actionJSON renders an action for the client component.
func actionJSON(a *action, p *payment, public string) *actionOut {
	page := public + "/_sim/redirect/" + a.ID
	var subtype string
	var tok any
	switch a.Kind {
	case "fingerprint":
		subtype, tok = a.Kind, fingerprintToken{
			ThreeDSMessageVersion: "2.2.0", ThreeDSMethodNotificationURL: public + "/_sim/3ds/method-notification",
			ThreeDSMethodURL: page, ThreeDSServerTransID: a.ID,
		}
	case "threeDS2":
		subtype, tok = "challenge", challengeToken{AcsTransID: a.ID, AcsURL: page, MessageVersion: "2.2.0", ThreeDSServerTransID: a.ID}
	default:
		// A redirect action has no paymentData (the published
		// CheckoutRedirectAction has none): the redirectResult identifies
		// the action.
		return &actionOut{Type: "redirect", Method: http.MethodGet, URL: page, PaymentMethodType: p.MethodType}
	}
	b, _ := json.Marshal(tok)
	return &actionOut{
		Type: "threeDS2", Subtype: subtype, PaymentMethodType: "scheme", PaymentData: a.PaymentData,
		Token: base64.StdEncoding.EncodeToString(b), AuthorisationToken: "sim." + a.ID,
	}
}

// DetailsFor returns the details object a client component would submit to
// /payments/details after completing action (a threeDS2 fingerprint or
// challenge, or a redirect, issued by this simulator) successfully or not.
func DetailsFor(action json.RawMessage, success bool) (json.RawMessage, error) {
	var a struct {
		Type  string `json:"type"`
		Token string `json:"token"`
		URL   string `json:"url"`
	}
	if err := json.Unmarshal(action, &a); err != nil {
		return nil, err
	}
	switch a.Type {
	case "threeDS2":
		raw, err := base64.StdEncoding.DecodeString(a.Token)
		if err != nil {
			return nil, err
		}
		var tok struct {
			ThreeDSServerTransID string `json:"threeDSServerTransID"`
		}
		if err := json.Unmarshal(raw, &tok); err != nil || tok.ThreeDSServerTransID == "" {
			return nil, errors.New("simulator: not a simulator challenge token")
		}
		return json.Marshal(map[string]string{"threeDSResult": encodeThreeDSResult(tok.ThreeDSServerTransID, success)})
	case "redirect":
		u, err := url.Parse(a.URL)
		if err != nil || !strings.Contains(u.Path, "/_sim/redirect/") {
			return nil, errors.New("simulator: not a simulator redirect URL")
		}
		return json.Marshal(map[string]string{"redirectResult": encodeRedirectResult(path.Base(u.Path), success)})
	}
	return nil, errors.New("simulator: unsupported action type " + a.Type)
}

func encodeThreeDSResult(id string, success bool) string {
	st := "N"
	if success {
		st = "Y"
	}
	b, _ := json.Marshal(actionResult{ThreeDSServerTransID: id, TransStatus: st})
	return base64.StdEncoding.EncodeToString(b)
}

func encodeRedirectResult(id string, success bool) string {
	r := "refused"
	if success {
		r = "authorised"
	}
	b, _ := json.Marshal(actionResult{ActionID: id, Result: r})
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeActionResult parses a result produced by this simulator.
func decodeActionResult(v string) (id string, success bool, ok bool) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		raw, err := enc.DecodeString(v)
		if err != nil {
			continue
		}
		var r actionResult
		if json.Unmarshal(raw, &r) != nil {
			continue
		}
		id = cmp.Or(r.ActionID, r.ThreeDSServerTransID)
		if id == "" && r.TransStatus == "" && r.Result == "" {
			continue
		}
		// Without an id (e.g. {"transStatus":"Y"}) the caller completes the
		// most recent open action.
		success = r.TransStatus == "Y" || r.TransStatus == "A" || r.Result == "authorised"
		return id, success, true
	}
	return "", false, false
}

// keywordSuccess decides a free-form result value: refusal words win over
// success words; anything else fails (like a wrong challenge password).
func keywordSuccess(v string) bool {
	l := strings.ToLower(v)
	has := func(words ...string) bool {
		return slices.ContainsFunc(words, func(w string) bool { return strings.Contains(l, w) })
	}
	return !has("refused", "wrong", "fail", "cancel", "declin", "reject") && has("authorised", "authorized", "password", "success", "approved")
}

// detailsIn is a /payments/details request.
type detailsIn struct {
	Details     map[string]any `json:"details"`
	PaymentData string         `json:"paymentData"`
}

func (s *Simulator) handleDetails(_ context.Context, c *call) result {
	var in detailsIn
	if e := decodeJSON(c.body, &in); e != nil {
		return errorResult(e)
	}
	if len(in.Details) == 0 {
		return errorResult(validationError(codeInvalidPayload, "Required field 'details' is not provided."))
	}
	var key, value string
	for _, k := range []string{"threeDSResult", "redirectResult", "payload"} {
		if v, ok := in.Details[k].(string); ok && v != "" {
			key, value = k, v
			break
		}
	}
	if value == "" {
		return errorResult(validationError(codeInvalidPayload, "Invalid payload provided: details needs threeDSResult, redirectResult or payload."))
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	// A value this simulator encoded names its action (or, like
	// {"transStatus":"Y"}, none); a free-form one (the challenge password,
	// "authorised") is decided by its words.
	id, success, decoded := decodeActionResult(value)
	if !decoded {
		success = keywordSuccess(value)
	}
	var act *action
	switch {
	case id != "":
		act = s.actions[id]
		if act != nil && in.PaymentData != "" && in.PaymentData != act.PaymentData {
			return errorResult(validationError(codeInvalidPayload, "Invalid payload provided: paymentData does not match"))
		}
	case in.PaymentData != "":
		act = s.actionsByData[in.PaymentData]
	default:
		// Without paymentData: the most recent open action it can belong to.
		if act = s.latestOpenAction(key); act == nil {
			return errorResult(validationError(codeInvalidPayload, "Invalid payload provided: no open action for details."+key+"; send the action's paymentData"))
		}
	}
	if act == nil {
		return errorResult(validationError(codeInvalidPayload, "Invalid payload provided: details."+key+" belongs to no action of this simulator"))
	}
	if act.Done {
		return errorResult(validationError(codeInvalidPayload, "Invalid payload provided: the action was already completed"))
	}
	p := s.payments[act.PSP]
	if p == nil || p.PendingActionID != act.ID {
		return errorResult(validationError(codeInvalidPayload, "Invalid payload provided: the payment is no longer awaiting this action"))
	}
	act.Done = true
	if next := s.finishAction(p, act, success); next != nil {
		return jsonResult(http.StatusOK, s.actionResponse(p, next, c.public))
	}
	return jsonResult(http.StatusOK, s.paymentResponse(p, true))
}

// latestOpenAction returns the most recent open action a free-form
// details value of key can complete (caller holds s.mu).
func (s *Simulator) latestOpenAction(key string) *action {
	var best *action
	for _, a := range s.actions {
		if a.Done {
			continue
		}
		fits := a.Kind == "redirect"
		if key == "threeDSResult" {
			fits = a.Kind == "threeDS2" || a.Kind == "fingerprint"
		}
		if p := s.payments[a.PSP]; fits && p != nil && p.PendingActionID == a.ID && (best == nil || a.Seq > best.Seq) {
			best = a
		}
	}
	return best
}

// finishAction settles a payment whose action completed, or returns its
// next action (a challenge after a fingerprint) (caller holds s.mu).
func (s *Simulator) finishAction(p *payment, a *action, success bool) *action {
	switch {
	case a.Kind == "fingerprint" && !p.Frictionless:
		// The fingerprint is not pass/fail: the issuer asks for a challenge.
		return s.newAction(p, "threeDS2")
	case success || a.Kind == "fingerprint":
		o := outcomeOf(p.Forced, true)
		if p.Forced != nil && (p.Forced.Behaviour == Fail500 || p.Forced.Behaviour == Hang) {
			o = outcomeOf(nil, true)
		}
		s.settle(p, o)
	case a.Kind == "threeDS2" || a.PSP != "" && s.threeDSStep(a):
		s.settle(p, outcomeOf(nil, false))
	default:
		s.settle(p, outcome{upstream.ResultRefused, "Refused", "2"})
	}
	return nil
}
