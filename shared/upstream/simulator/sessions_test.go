package simulator

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/upstream"
)

func createSession(t *testing.T, e *env, mutate func(*upstream.SessionRequest)) upstream.SessionResponse {
	t.Helper()
	req := upstream.SessionRequest{
		MerchantAccount: testMerchant, Amount: eur(4200), Reference: "sess-ref", ReturnURL: testReturn,
		CountryCode: "NL", ShopperInteraction: "Ecommerce", BlockedPaymentMethods: []string{"sepadirectdebit", "bacs", "directdebit_GB"},
		Metadata: map[string]string{"siteId": "site-1"},
		Splits: []upstream.Split{
			{Account: "BA_MERCHANT", Amount: &upstream.SplitAmount{Value: 4100}, Type: "BalanceAccount", Reference: "s1"},
			{Account: "BA_PLATFORM", Amount: &upstream.SplitAmount{Value: 100}, Type: "Commission", Reference: "s2"},
		},
	}
	if mutate != nil {
		mutate(&req)
	}
	s, err := e.client.CreateSession(context.Background(), req, "")
	must(t, err)
	return s
}

func TestCreateSession(t *testing.T) {
	e := newEnv(t)
	s := createSession(t, e, nil)
	if !strings.HasPrefix(s.ID, "CS") || len(s.ID) != 18 || !strings.HasPrefix(s.SessionData, "Ab02b4c0!") ||
		s.Amount != eur(4200) || s.Reference != "sess-ref" || s.ReturnURL != testReturn || s.MerchantAccount != testMerchant ||
		!s.ExpiresAt.Equal(testStart.Add(time.Hour)) || s.Mode != "embedded" || len(s.BlockedPaymentMethods) != 3 {
		t.Fatalf("session = %+v", s)
	}
	// Status 201 on the wire.
	body, _ := json.Marshal(upstream.SessionRequest{MerchantAccount: "M", Amount: eur(1), Reference: "r", ReturnURL: testReturn})
	if status, _, _ := e.raw(t, "POST", "/v71/sessions", testAPIKey, "", string(body)); status != 201 {
		t.Fatalf("status = %d", status)
	}
	st, ok := e.sim.Session(s.ID)
	if !ok || st.Completed || st.Amount != eur(4200) {
		t.Fatalf("state = %+v", st)
	}
}

func TestPaySession(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	s := createSession(t, e, nil)

	// A refusal leaves the session open for another attempt.
	r1, err := e.sim.PaySession(ctx, s.ID, SessionPayment{HolderName: "DECLINED"})
	if err != nil || r1.ResultCode != "Refused" {
		t.Fatalf("r1 = %+v, err = %v", r1, err)
	}
	r2, err := e.sim.PaySession(ctx, s.ID, SessionPayment{})
	if err != nil || r2.ResultCode != "Authorised" || r2.PSPReference == r1.PSPReference || r2.SessionResult == "" {
		t.Fatalf("r2 = %+v, err = %v", r2, err)
	}
	if _, err := e.sim.PaySession(ctx, s.ID, SessionPayment{}); !errors.Is(err, ErrSessionCompleted) {
		t.Fatalf("third attempt: %v", err)
	}
	p, _ := e.sim.Payment(r2.PSPReference)
	if p.SessionID != s.ID || p.Amount != eur(4200) || p.Reference != "sess-ref" || len(p.Splits) != 2 || p.Request != nil {
		t.Fatalf("payment = %+v", p)
	}
	e.flush(t)
	items := e.rec.items(t)
	if len(items) != 2 || items[0].Success != "false" || items[1].Success != "true" {
		t.Fatalf("items = %+v", items)
	}
	for _, it := range items {
		if it.AdditionalData["checkoutSessionId"] != s.ID || it.AdditionalData["metadata.siteId"] != "site-1" || it.MerchantReference != "sess-ref" {
			t.Fatalf("item = %+v", it)
		}
	}
	if st, _ := e.sim.Session(s.ID); !st.Completed || len(st.Payments) != 2 {
		t.Fatalf("session state = %+v", st)
	}
}

func TestPaySessionErrors(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	s := createSession(t, e, nil)
	if _, err := e.sim.PaySession(ctx, "CSNOPE", SessionPayment{}); !errors.Is(err, ErrSessionNotFound) {
		t.Fatalf("unknown: %v", err)
	}
	if _, err := e.sim.PaySession(ctx, s.ID, SessionPayment{PaymentMethodType: "sepadirectdebit"}); !errors.Is(err, ErrPaymentMethodNotAvailable) {
		t.Fatalf("blocked method: %v", err)
	}
	if _, err := e.sim.PaySession(ctx, s.ID, SessionPayment{CardNumber: "4000000000000507"}); !errors.Is(err, ErrSimulatedFailure) {
		t.Fatalf("500 card: %v", err)
	}
	var ae *apiError
	if _, err := e.sim.PaySession(ctx, s.ID, SessionPayment{CardNumber: "1234"}); !errors.As(err, &ae) || ae.ErrorCode != "101" {
		t.Fatalf("bad card: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := e.sim.PaySession(cctx, s.ID, SessionPayment{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled ctx: %v", err)
	}
	e.clock.Advance(time.Hour)
	if _, err := e.sim.PaySession(ctx, s.ID, SessionPayment{}); !errors.Is(err, ErrSessionExpired) {
		t.Fatalf("expired: %v", err)
	}
	e.wantPayments(t, 0)
}

func TestPaySessionChallengeAndMethods(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	s := createSession(t, e, nil)
	r, err := e.sim.PaySession(ctx, s.ID, SessionPayment{CardNumber: "5454545454545454", ChallengeResult: "wrong"})
	if err != nil || r.ResultCode != "Refused" || r.RefusalReason != "3D Not Authenticated" {
		t.Fatalf("failed challenge: %+v %v", r, err)
	}
	r, err = e.sim.PaySession(ctx, s.ID, SessionPayment{CardNumber: "5454545454545454"})
	if err != nil || r.ResultCode != "Authorised" {
		t.Fatalf("passed challenge: %+v %v", r, err)
	}
	s2 := createSession(t, e, func(r *upstream.SessionRequest) { r.AllowedPaymentMethods = []string{"ideal"} })
	if _, err := e.sim.PaySession(ctx, s2.ID, SessionPayment{}); !errors.Is(err, ErrPaymentMethodNotAvailable) {
		t.Fatalf("card not allowed: %v", err)
	}
	r, err = e.sim.PaySession(ctx, s2.ID, SessionPayment{PaymentMethodType: "ideal"})
	if err != nil || r.ResultCode != "Authorised" {
		t.Fatalf("ideal: %+v %v", r, err)
	}
}

func TestSessionStoreModes(t *testing.T) {
	tests := []struct {
		name    string
		mode    string
		flag    *bool
		consent bool
		stored  bool
	}{
		{"askForConsent without consent", "askForConsent", nil, false, false},
		{"askForConsent with consent", "askForConsent", nil, true, true},
		{"enabled", "enabled", nil, false, true},
		{"disabled wins", "disabled", ptr(true), true, false},
		{"flag", "", ptr(true), false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			s := createSession(t, e, func(r *upstream.SessionRequest) {
				r.ShopperReference, r.StorePaymentMethodMode, r.StorePaymentMethod = "shopper-7", tt.mode, tt.flag
			})
			r, err := e.sim.PaySession(context.Background(), s.ID, SessionPayment{StorePaymentMethod: tt.consent})
			must(t, err)
			if (r.StoredPaymentMethodID != "") != tt.stored {
				t.Fatalf("stored = %q, want %v", r.StoredPaymentMethodID, tt.stored)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestSessionHooks(t *testing.T) {
	e := newEnv(t)
	s := createSession(t, e, nil)
	status, body, _ := e.raw(t, "POST", "/_sim/sessions/"+s.ID+"/pay", testAPIKey, "", `{"holderName":"APPROVED"}`)
	var res SessionResult
	if status != 200 || json.Unmarshal(body, &res) != nil || res.ResultCode != "Authorised" {
		t.Fatalf("%d %s", status, body)
	}
	for _, tt := range []struct {
		path, body string
		status     int
	}{
		{"/_sim/sessions/" + s.ID + "/pay", `{}`, 409},
		{"/_sim/sessions/CSNOPE/pay", ``, 404},
		{"/_sim/sessions/" + s.ID + "/pay", `{bad`, 400},
	} {
		if status, body, _ := e.raw(t, "POST", tt.path, testAPIKey, "", tt.body); status != tt.status {
			t.Fatalf("%s: %d %s", tt.path, status, body)
		}
	}
	if status, _, _ := e.raw(t, "POST", "/_sim/sessions/"+s.ID+"/pay", "", "", `{}`); status != 401 {
		t.Fatalf("hook without key: %d", status)
	}
	status, body, _ = e.raw(t, "GET", "/_sim/payments/"+res.PSPReference, testAPIKey, "", "")
	if status != 200 || !strings.Contains(string(body), `"state":"Authorised"`) {
		t.Fatalf("payment hook: %d %s", status, body)
	}
	status, body, _ = e.raw(t, "GET", "/_sim/notifications", testAPIKey, "", "")
	if status != 200 || !strings.Contains(string(body), res.PSPReference) {
		t.Fatalf("notifications hook: %d %s", status, body)
	}
	if status, _, _ := e.raw(t, "POST", "/_sim/flush", testAPIKey, "", ""); status != 200 {
		t.Fatalf("flush hook: %d", status)
	}
	if status, body, _ := e.raw(t, "POST", "/_sim/offers/expire", testAPIKey, "", ""); status != 200 || !strings.Contains(string(body), `"closed":[]`) {
		t.Fatalf("expire hook: %d %s", status, body)
	}
}

func TestHostedSession(t *testing.T) {
	e := newEnv(t)
	s := createSession(t, e, func(r *upstream.SessionRequest) { r.Mode = "hosted" })
	if s.URL != e.srv.URL+"/_sim/sessions/"+s.ID+"/hosted" {
		t.Fatalf("url = %q", s.URL)
	}
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get(s.URL)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("page: %v %v", resp, err)
	}
	resp.Body.Close()
	resp, err = noFollow.Get(s.URL + "?pay=1")
	must(t, err)
	resp.Body.Close()
	loc, _ := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != 302 || loc.Query().Get("sessionId") != s.ID || loc.Query().Get("sessionResult") == "" {
		t.Fatalf("redirect = %d %s", resp.StatusCode, loc)
	}
	if st, _ := e.sim.Session(s.ID); !st.Completed {
		t.Fatal("hosted payment did not complete the session")
	}
}

// A session paid with a test card defaults to that card's CVC; a wrong CVC
// is refused as on /payments.
func TestPaySessionCardCVC(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	for _, tc := range TestCards() {
		if tc.Behaviour == Fail500 || tc.Behaviour == Hang {
			continue
		}
		s := createSession(t, e, nil)
		r, err := e.sim.PaySession(ctx, s.ID, SessionPayment{CardNumber: tc.Number})
		if err != nil || r.ResultCode != "Authorised" {
			t.Fatalf("%s, default CVC: %+v, %v", tc.Number, r, err)
		}
		if tc.CVC == "" {
			continue
		}
		s = createSession(t, e, nil)
		if r, err := e.sim.PaySession(ctx, s.ID, SessionPayment{CardNumber: tc.Number, CVC: "123"}); err != nil || r.ResultCode != "Refused" || r.RefusalReason != "Refused" {
			t.Fatalf("%s, wrong CVC: %+v, %v", tc.Number, r, err)
		}
	}
}
