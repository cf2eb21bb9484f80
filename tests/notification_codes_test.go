package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/httpapi"
	"github.com/yp/paysvc/shared/notifications"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/provision"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/testenv"
	"github.com/yp/paysvc/shared/upstream"
	"github.com/yp/paysvc/shared/upstream/connector"
	"github.com/yp/paysvc/shared/upstream/upstreamapi"
)

// TestEveryNotificationCode walks every event code of the platform's
// webhook document (Webhooks-v1.json: the webhooks and every eventCode
// enum), and one it does not list, on both stores: each is posted in its
// published shape (its example; for a code without one, the required
// fields of its request schema), validated against the document first,
// and its effect is the one its row of the code table
// (shared/payments/codes.go, docs/payments.md "Every notification code")
// states: none falls to a default.
func TestEveryNotificationCode(t *testing.T) {
	doc := webhookDoc(t)
	codes := doc.codes()
	if len(codes) != 50 {
		t.Fatalf("the document names %d codes, want 50: %v", len(codes), codes)
	}
	var noWebhook, noExample []string
	for _, c := range codes {
		if _, ok := doc.Webhooks["/"+c]; !ok {
			noWebhook = append(noWebhook, c)
		} else if len(doc.examples(c)) == 0 {
			noExample = append(noExample, c)
		}
		if code := payments.CodeOf(c); !code.Known() || code.Source() == "" {
			t.Errorf("%s: no row in the code table (or no source)", c)
		}
	}
	if !slices.Equal(noWebhook, []string{"AUTHENTICATION", "HANDLED_EXTERNALLY"}) ||
		!slices.Equal(noExample, []string{"PREARBITRATION_ACCEPTED", "PREARBITRATION_DECLINED", "PREARBITRATION_ISSUER_WITHDRAWN",
			"PREARBITRATION_OPEN", "SCHEME_ARBITRATION", "SCHEME_ARBITRATION_LOST", "SCHEME_ARBITRATION_WON"}) {
		t.Fatalf("codes without a webhook %v, without an example %v", noWebhook, noExample)
	}
	if c := payments.CodeOf(futureCode); c.Known() || c.Category() != "info" {
		t.Fatalf("%s: %+v, want an unknown info code", futureCode, c)
	}
	eachStore(t, func(t *testing.T, dyn bool) { everyCode(t, dyn, doc, append(codes, futureCode)) })
}

// futureCode is a code the platform may add tomorrow.
const futureCode = "FUTURE_CODE_44"

// codeWant is a money or state code's effect: the payment's view after it.
type codeWant struct {
	setup                                      string // the payment's state before: "authorised", "captured", "refunded", "partial"
	state                                      payments.State
	captured, refunded, capturable, refundable int64
	amount                                     int64  // the item's amount (0: the setup's)
	names                                      string // the item's pspReference: "capture", "refund" (the service's operation), "" a fresh one
}

// codeWants are the money and state codes' effects (a 1000 EUR payment;
// "partial": 400 captured; "refunded": captured, 500 refunded).
var codeWants = map[string]codeWant{
	"AUTHORISATION":            {setup: "authorised", state: payments.StateAuthorised, capturable: 1000},
	"OFFER_CLOSED":             {setup: "authorised", state: payments.StateAuthorised, capturable: 1000},
	"AUTHORISATION_ADJUSTMENT": {setup: "authorised", state: payments.StateAuthorised, capturable: 1500, amount: 1500},
	"CAPTURE":                  {setup: "authorised", state: payments.StatePartiallyCaptured, captured: 400, capturable: 600, refundable: 400, amount: 400},
	"CAPTURE_FAILED":           {setup: "captured", state: payments.StateAuthorised, capturable: 1000, names: "capture"},
	"REFUND":                   {setup: "captured", state: payments.StatePartiallyRefunded, captured: 1000, refunded: 300, refundable: 700, amount: 300},
	"REFUND_FAILED":            {setup: "refunded", state: payments.StateCaptured, captured: 1000, refundable: 1000, names: "refund"},
	"REFUNDED_REVERSED":        {setup: "refunded", state: payments.StateCaptured, captured: 1000, refundable: 1000, names: "refund"},
	"REFUND_WITH_DATA":         {setup: "captured", state: payments.StatePartiallyRefunded, captured: 1000, refunded: 300, refundable: 700, amount: 300},
	"POSTPONED_REFUND":         {setup: "refunded", state: payments.StatePartiallyRefunded, captured: 1000, refunded: 500, refundable: 500, names: "refund"},
	"CANCEL_OR_REFUND":         {setup: "captured", state: payments.StateRefunded, captured: 1000, refunded: 1000},
	"CANCELLATION":             {setup: "partial", state: payments.StateCaptured, captured: 400, refundable: 400},
	"TECHNICAL_CANCEL":         {setup: "partial", state: payments.StateCaptured, captured: 400, refundable: 400},
	"EXPIRE":                   {setup: "partial", state: payments.StateCaptured, captured: 400, refundable: 400},
	"MANUAL_REVIEW_ACCEPT":     {setup: "authorised", state: payments.StateAuthorised, capturable: 1000},
	"MANUAL_REVIEW_REJECT":     {setup: "authorised", state: payments.StateCancelled},
}

// falseWants are the effects of the codes whose success=false the table
// defines, posted in the same shapes with success "false".
var falseWants = map[string]codeWant{
	"CAPTURE":              {setup: "authorised", state: payments.StateAuthorised, capturable: 1000, amount: 400},
	"CAPTURE_FAILED":       {setup: "captured", state: payments.StateAuthorised, capturable: 1000, names: "capture"},
	"REFUND":               {setup: "captured", state: payments.StateCaptured, captured: 1000, refundable: 1000, amount: 300},
	"REFUNDED_REVERSED":    {setup: "refunded", state: payments.StatePartiallyRefunded, captured: 1000, refunded: 500, refundable: 500, names: "refund"},
	"REFUND_WITH_DATA":     {setup: "captured", state: payments.StateCaptured, captured: 1000, refundable: 1000, amount: 300},
	"CANCELLATION":         {setup: "partial", state: payments.StatePartiallyCaptured, captured: 400, capturable: 600, refundable: 400},
	"EXPIRE":               {setup: "partial", state: payments.StatePartiallyCaptured, captured: 400, capturable: 600, refundable: 400},
	"CANCEL_OR_REFUND":     {setup: "captured", state: payments.StateCaptured, captured: 1000, refundable: 1000},
	"MANUAL_REVIEW_REJECT": {setup: "authorised", state: payments.StateAuthorised, capturable: 1000},
}

// accountCounter counts the account-level metric.
type accountCounter struct {
	mu    sync.Mutex
	codes []string
}

func (c *accountCounter) NotificationUnroutable(string) {}
func (c *accountCounter) NotificationLiveMismatch()     {}
func (c *accountCounter) NotificationAccountLevel(code string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.codes = append(c.codes, code)
}

func everyCode(t *testing.T, dyn bool, doc *webhookDocument, codes []string) {
	e := testenv.NewWith(t, testenv.Options{Dynamo: dyn})
	ctx := context.Background()
	p := &provision.Provisioner{Store: e.Store, Env: tenant.EnvTest, Clock: e.Clock}
	if _, _, err := p.PutSubscription(ctx, provision.SubscriptionSpec{MerchantID: testenv.MerchantA, URL: "https://alpha.example/hooks"}); err != nil {
		t.Fatal(err)
	}
	signer, err := upstream.NewSigner(testenv.HMACKey)
	if err != nil {
		t.Fatal(err)
	}
	metrics := &accountCounter{}
	receiver := &notifications.Receiver{Events: e.SelfService, Payments: e.Store, Tenants: e.Store, Deliveries: e.SelfService,
		Queue: e.Queue, Clock: e.Clock, Log: e.Deps.Log, Metrics: metrics}
	// The endpoint with basic auth, and one without (the type/data bodies,
	// which carry no HMAC, are refused there).
	notify := httpapi.Notifications(e.Deps, &connector.Inbox{Signer: signer, Log: e.Deps.Log, Receiver: receiver, BasicAuth: true},
		httpapi.BasicAuth{Username: "platform", Password: "s3cret"}, e.Handler)
	noAuth := httpapi.Notifications(e.Deps, &connector.Inbox{Signer: signer, Log: e.Deps.Log, Receiver: receiver},
		httpapi.BasicAuth{}, e.Handler)
	v := upstreamValidator(t)
	postTo := func(authed bool, body []byte) int {
		req := httptest.NewRequest(http.MethodPost, httpapi.NotificationsPath, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		h := noAuth
		if authed {
			h = notify
			req.SetBasicAuth("platform", "s3cret")
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w.Code
	}
	post := func(body []byte) int { return postTo(true, body) }
	sent := 0 // the simulator's notifications delivered so far
	deliver := func(t *testing.T) {
		t.Helper()
		all := e.Sim.Notifications()
		for _, it := range all[sent:] {
			body := encodeJSON(t, upstream.Notification{Live: "false", NotificationItems: []upstream.NotificationItem{{Item: it}}})
			if status := post(body); status != http.StatusOK {
				t.Fatalf("the simulator's %s %s: %d", it.EventCode, it.PSPReference, status)
			}
			e.Clock.Advance(time.Second)
		}
		sent = len(all)
	}
	n := 0
	for _, code := range codes {
		shapes := doc.examples(code)
		if len(shapes) == 0 {
			shapes = []map[string]any{doc.required(code)}
		}
		if code == "RECURRING_CONTRACT" { // a second shape: the payment in originalPsp alone
			alone := clone(shapes[0])
			delete(alone, "originalReference")
			shapes = append(shapes, alone)
		}
		cat := payments.CodeOf(code).Category()
		published := len(shapes)
		if _, ok := falseWants[code]; ok {
			shapes = append(shapes, shapes[0]) // posted with success "false"
		}
		for i, shape := range shapes {
			failed := i == published
			n++
			if _, typed := shape["type"]; typed {
				// A type/data body (ACH_NOTIFICATION_OF_CHANGE,
				// DIRECT_DEBIT_NOTICE_OF_CHANGE_NOTIFICATION): no item, no HMAC.
				t.Run(fmt.Sprintf("%s/%d", code, i), func(t *testing.T) {
					body := encodeJSON(t, shape)
					if errs := v.Notification(body); len(errs) != 0 && !strings.Contains(strings.Join(errs, " "), "without items") {
						t.Fatalf("%s: %v", code, errs)
					}
					if status := postTo(false, body); status != http.StatusUnauthorized {
						t.Fatalf("without basic auth: %d, want 401", status)
					}
					jobs := len(e.Queue.Jobs())
					if status := post(body); status != http.StatusOK {
						t.Fatalf("with basic auth: %d", status)
					}
					listed, err := e.SelfService.ListEvents(ctx, notifications.EventAccount, 0)
					if err != nil {
						t.Fatal(err)
					}
					kept := slices.ContainsFunc(listed, func(ev notifications.Event) bool { return ev.Item.AdditionalData["type"] == shape["type"] })
					if !payments.CodeOf(code).AccountLevel() || !kept || len(e.Queue.Jobs()) != jobs {
						t.Fatalf("%s not kept account-level: %+v", code, listed)
					}
				})
				continue
			}
			t.Run(fmt.Sprintf("%s/%d", code, i), func(t *testing.T) {
				wants := codeWants
				if failed {
					wants = falseWants
				}
				w := wants[code]
				setup := w.setup
				if setup == "" {
					setup = map[string]string{"info": "captured", "dispute": "captured", "account": "authorised"}[cat]
				}
				pay := codePayment(t, e, fmt.Sprintf("codes-%d", n), setup)
				deliver(t)
				item := clone(shape)
				item["merchantAccountCode"] = "AlphaECOM"
				item["eventCode"] = code
				if cat == "money" || cat == "state" { // the effect of a success, then of a failure
					item["success"] = map[bool]string{false: "true", true: "false"}[failed]
				}
				if cat != "account" {
					routeTo(item, pay, w, n)
				}
				body := signedBody(t, signer, item)
				published := encodeJSON(t, map[string]any{"live": "false", "notificationItems": []any{map[string]any{"NotificationRequestItem": shape}}})
				validateCode(t, v, code, body, published)
				ref, _ := item["pspReference"].(string)
				before := codeHead(t, e, pay, ref)
				jobs := len(e.Queue.Jobs())
				if status := post(body); status != http.StatusOK {
					t.Fatalf("posted: %d", status)
				}
				after := codeHead(t, e, pay, ref)
				switch cat {
				case "money", "state":
					want, ok := wants[code]
					if !ok {
						t.Fatalf("%s is %s: codeWants has no row", code, cat)
					}
					got := after.View()
					if got.State != want.state || got.Captured != want.captured || got.Refunded != want.refunded ||
						got.Capturable != want.capturable || got.Refundable != want.refundable {
						t.Fatalf("after %s: %+v; want %+v", code, got, want)
					}
					if !failed {
						checkReleased(t, e, code, pay)
					}
				case "info", "dispute":
					if after.Totals != before.Totals {
						t.Fatalf("%s moved money: %+v → %+v", code, before.Totals, after.Totals)
					}
					if !slices.ContainsFunc(e.Timeline(pay.psp), func(f payments.Fact) bool { return f.Kind == code }) {
						t.Fatalf("%s not on the timeline", code)
					}
					if len(e.Queue.Jobs()) != jobs+1 {
						t.Fatalf("%s: %d deliveries enqueued, want 1", code, len(e.Queue.Jobs())-jobs)
					}
					if cat == "dispute" {
						checkDispute(t, e, code, pay, ref)
					}
				case "account":
					if after.Version != before.Version || len(e.Queue.Jobs()) != jobs {
						t.Fatalf("%s wrote the payment or enqueued a delivery", code)
					}
					listed, err := e.SelfService.ListEvents(ctx, notifications.EventAccount, 0)
					if err != nil {
						t.Fatal(err)
					}
					if !slices.ContainsFunc(listed, func(ev notifications.Event) bool { return ev.Item.EventCode == code }) {
						t.Fatalf("%s not listed account-level: %+v", code, listed)
					}
					metrics.mu.Lock()
					counted := slices.Contains(metrics.codes, code)
					metrics.mu.Unlock()
					if !counted {
						t.Fatalf("%s not counted account-level", code)
					}
				default:
					t.Fatalf("%s: category %q", code, cat)
				}
			})
		}
	}
	for code := range codeWants {
		if c := payments.CodeOf(code).Category(); c != "money" && c != "state" {
			t.Errorf("codeWants has %s, a %s code", code, c)
		}
	}
	if un, err := e.SelfService.ListEvents(ctx, notifications.EventUnroutable, 0); err != nil || len(un) != 0 {
		t.Errorf("unroutable: %v %+v", err, un)
	}
}

// codePay is a row's payment and its operations' pspReferences.
type codePay struct{ psp, capture, refund string }

// codePayment makes a 1000 EUR payment of merchant A (manual capture) in
// setup's state (its notifications are the simulator's, delivered next).
func codePayment(t *testing.T, e *testenv.Env, ref, setup string) codePay {
	t.Helper()
	pay := codePay{psp: lsPay(t, e, 1000, ref)}
	op := func(kind string, value int) string {
		r := lsModify(e, context.Background(), pay.psp, kind, value, ref+"-"+kind)
		var out struct{ PSPReference string }
		if err := json.Unmarshal(r.Body, &out); err != nil || r.Status >= 300 {
			t.Fatalf("%s: %d %s", kind, r.Status, r.Body)
		}
		return out.PSPReference
	}
	switch setup {
	case "partial":
		pay.capture = op("captures", 400)
	case "captured", "refunded":
		pay.capture = op("captures", 1000)
	}
	if setup == "refunded" {
		pay.refund = op("refunds", 500)
	}
	return pay
}

// routeTo puts the row's payment in item: where the shape has an
// originalReference (or originalPsp), it names the payment and the item
// gets its own reference (the service's operation it names, or a fresh
// one); where it has neither, its pspReference names the payment.
func routeTo(item map[string]any, pay codePay, w codeWant, n int) {
	_, orig := item["originalReference"]
	_, opsp := item["originalPsp"]
	if orig {
		item["originalReference"] = pay.psp
	}
	if opsp {
		item["originalPsp"] = pay.psp
	}
	switch {
	case w.names == "capture":
		item["pspReference"] = pay.capture
	case w.names == "refund":
		item["pspReference"] = pay.refund
	case orig || opsp:
		item["pspReference"] = fmt.Sprintf("NTF%013d", n)
	default:
		item["pspReference"] = pay.psp
	}
	amount := map[string]any{"currency": "EUR", "value": 1000}
	switch {
	case w.amount != 0:
		amount["value"] = w.amount
	case w.names == "refund":
		amount["value"] = 500
	}
	item["amount"] = amount
}

// signedBody signs item (its HMAC in additionalData) and wraps it in a
// notification.
func signedBody(t *testing.T, signer *upstream.Signer, item map[string]any) []byte {
	t.Helper()
	raw := encodeJSON(t, item)
	var typed upstream.NotificationRequestItem
	decodeJSON(t, raw, &typed)
	ad, _ := item["additionalData"].(map[string]any)
	if ad == nil {
		ad = map[string]any{}
	}
	ad[upstream.KeyHMACSignature] = signer.SignItem(typed)
	item["additionalData"] = ad
	body := encodeJSON(t, map[string]any{"live": "false", "notificationItems": []any{map[string]any{"NotificationRequestItem": item}}})
	return body
}

// validateCode validates body against the document: codes its own enum
// lacks are validated as a code of the same schema, and say so. Where the
// document's own example (published) breaks its schema, those errors are
// the document's (logged); body may add none.
func validateCode(t *testing.T, v *upstreamapi.Validator, code string, body, published []byte) {
	t.Helper()
	as := code
	switch code {
	case "PREARBITRATION_ACCEPTED", "PREARBITRATION_DECLINED", "PREARBITRATION_ISSUER_WITHDRAWN",
		"SCHEME_ARBITRATION", "SCHEME_ARBITRATION_WON", "SCHEME_ARBITRATION_LOST":
		as = "CHARGEBACK"
		t.Logf("the document's own enum lacks %s; enum relaxed (validated as CHARGEBACK, the same DisputesNotificationRequestItem)", code)
	case "AUTHENTICATION", "HANDLED_EXTERNALLY", futureCode:
		as = "MANUAL_REVIEW_ACCEPT"
		t.Logf("%s has no webhook of its own: validated as MANUAL_REVIEW_ACCEPT (the generic NotificationRequestItem)", code)
	}
	relax := func(b []byte) []byte {
		return bytes.Replace(b, []byte(`"eventCode":"`+code+`"`), []byte(`"eventCode":"`+as+`"`), 1)
	}
	// An error's words, sorted: the validator lists a set of properties in
	// no fixed order.
	key := func(e string) string {
		w := strings.Fields(strings.NewReplacer(",", " ", "'", " ").Replace(e))
		sort.Strings(w)
		return strings.Join(w, " ")
	}
	own := map[string]bool{}
	for _, e := range v.Notification(relax(published)) {
		own[key(e)] = true
		t.Logf("%s: the document's own example breaks its schema: %s", code, e)
	}
	for _, e := range v.Notification(relax(body)) {
		if !own[key(e)] {
			t.Fatalf("%s: not in its published shape: %s\n%s", code, e, body)
		}
	}
}

// codeHead reads the row's payment and checks its cached Totals are the
// fold of its entries (item: the item's pspReference).
func codeHead(t *testing.T, e *testenv.Env, pay codePay, item string) payments.Head {
	t.Helper()
	h, err := e.Store.GetPayment(context.Background(), pay.psp)
	if err != nil {
		t.Fatal(err)
	}
	es := codeEntries(t, e, pay, item)
	if fold := payments.Fold(h, es); fold != h.Totals {
		t.Fatalf("cached totals %+v, the fold %+v", h.Totals, fold)
	}
	return h
}

// codeEntries are the entries of the row's payment that can count: its
// operations', the item's own and the payment's own of each kind.
func codeEntries(t *testing.T, e *testenv.Env, pay codePay, item string) []payments.Entry {
	t.Helper()
	refs := []string{"expiry", "dispute", "notice", "cancel", "reversal", "capture", "refund"}
	for _, r := range []string{pay.capture, pay.refund, item} {
		if r != "" && r != pay.psp && !slices.Contains(refs, r) {
			refs = append(refs, r)
		}
	}
	es, err := e.Store.GetEntries(context.Background(), pay.psp, refs...)
	if err != nil {
		t.Fatal(err)
	}
	return es
}

// checkReleased: after a released remainder nothing more is captured and
// captured money stays refundable; after a review accepted the payment
// is captured.
func checkReleased(t *testing.T, e *testenv.Env, code string, pay codePay) {
	t.Helper()
	switch code {
	case "EXPIRE", "CANCELLATION", "TECHNICAL_CANCEL":
		if r := lsModify(e, context.Background(), pay.psp, "captures", 100, "after-"+pay.psp); r.Status < 400 || r.Status >= 500 {
			t.Fatalf("a capture after %s: %d %s", code, r.Status, r.Body)
		}
		if r := lsModify(e, context.Background(), pay.psp, "refunds", 100, "refund-after-"+pay.psp); r.Status != http.StatusOK && r.Status != http.StatusCreated {
			t.Fatalf("a refund after %s: %d %s", code, r.Status, r.Body)
		}
	case "MANUAL_REVIEW_ACCEPT":
		if r := lsModify(e, context.Background(), pay.psp, "captures", 1000, "after-"+pay.psp); r.Status >= 300 {
			t.Fatalf("a capture after %s: %d %s", code, r.Status, r.Body)
		}
	}
}

// checkDispute: a dispute's events sit on an entry of kind dispute that
// moves no money, and a refund still goes through (never a reversal).
func checkDispute(t *testing.T, e *testenv.Env, code string, pay codePay, ref string) {
	t.Helper()
	es := codeEntries(t, e, pay, ref)
	found := false
	for _, en := range es {
		if slices.ContainsFunc(en.Notices, func(n payments.Notice) bool { return n.Code == code }) {
			found = true
			if en.Kind != "dispute" || en.Contribution() != (payments.Totals{}) {
				t.Fatalf("%s on entry %+v", code, en)
			}
		}
	}
	if !found {
		t.Fatalf("%s on no entry", code)
	}
	if r := lsModify(e, context.Background(), pay.psp, "refunds", 500, "refund-"+pay.psp); r.Status >= 300 {
		t.Fatalf("a refund after %s: %d %s", code, r.Status, r.Body)
	}
}

// webhookDocument is the part of Webhooks-v1.json the walk reads.
type webhookDocument struct {
	Webhooks   map[string]map[string]json.RawMessage `json:"webhooks"`
	Components struct {
		Examples map[string]struct {
			Value json.RawMessage `json:"value"`
		} `json:"examples"`
	} `json:"components"`
	raw map[string]any
}

func webhookDoc(t *testing.T) *webhookDocument {
	t.Helper()
	b := readFile(t, filepath.Join(repoRoot, "shared", "upstream", "upstreamapi", "testdata", "Webhooks-v1.json"))
	var d webhookDocument
	decodeJSON(t, b, &d)
	decodeJSON(t, b, &d.raw)
	return &d
}

// codes are the webhooks' codes and every eventCode enum's, sorted.
func (d *webhookDocument) codes() []string {
	set := map[string]bool{}
	for k := range d.Webhooks {
		set[strings.TrimPrefix(k, "/")] = true
	}
	var walk func(any)
	walk = func(o any) {
		switch o := o.(type) {
		case map[string]any:
			for k, v := range o {
				if ec, ok := v.(map[string]any); ok && k == "eventCode" {
					for _, c := range asSlice(ec["enum"]) {
						set[c.(string)] = true
					}
				}
				walk(v)
			}
		case []any:
			for _, v := range o {
				walk(v)
			}
		}
	}
	walk(d.raw["components"])
	out := make([]string, 0, len(set))
	for c := range set {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

func asSlice(v any) []any { s, _ := v.([]any); return s }

// examples are code's published items (a type/data body as it is).
func (d *webhookDocument) examples(code string) []map[string]any {
	var op struct {
		Post struct {
			RequestBody struct {
				Content map[string]struct {
					Examples map[string]struct {
						Ref   string          `json:"$ref"`
						Value json.RawMessage `json:"value"`
					} `json:"examples"`
				} `json:"content"`
			} `json:"requestBody"`
		} `json:"post"`
	}
	raw, ok := d.Webhooks["/"+code]
	if !ok {
		return nil
	}
	b, _ := json.Marshal(raw)
	_ = json.Unmarshal(b, &op)
	names := []string{}
	exs := op.Post.RequestBody.Content["application/json"].Examples
	for name := range exs {
		names = append(names, name)
	}
	sort.Strings(names)
	var out []map[string]any
	for _, name := range names {
		ex := exs[name]
		val := ex.Value
		if ex.Ref != "" {
			val = d.Components.Examples[strings.TrimPrefix(ex.Ref, "#/components/examples/")].Value
		}
		var body map[string]any
		if err := json.Unmarshal(val, &body); err != nil {
			continue
		}
		if items := asSlice(body["notificationItems"]); len(items) > 0 {
			body = items[0].(map[string]any)["NotificationRequestItem"].(map[string]any)
		}
		out = append(out, body)
	}
	return out
}

// required is the item of a code without an example: the required fields
// of its item schema (pspReference, merchantReference,
// merchantAccountCode, eventDate, eventCode, amount, success), the
// references filled in by routeTo.
func (d *webhookDocument) required(code string) map[string]any {
	return map[string]any{"pspReference": "", "merchantReference": "order-1", "merchantAccountCode": "AlphaECOM",
		"eventDate": "2026-11-23T10:00:00+01:00", "eventCode": code, "amount": map[string]any{"currency": "EUR", "value": 1000},
		"success": "true"}
}

// clone deep-copies a JSON object.
func clone(m map[string]any) map[string]any {
	b, _ := json.Marshal(m)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return out
}
