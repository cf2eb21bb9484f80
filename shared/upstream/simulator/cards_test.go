package simulator

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/upstream"
)

func TestTestCardTableIsConsistent(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range TestCards() {
		if !onlyDigits(c.Number) || !luhnValid(c.Number) {
			t.Errorf("%s is not a Luhn-valid number", c.Number)
		}
		if seen[c.Number] {
			t.Errorf("%s listed twice", c.Number)
		}
		seen[c.Number] = true
		if c.Behaviour != Fail500 && c.Behaviour != Hang && c.Brand != "card" {
			if got := brandOf(c.Number); got != c.Brand {
				t.Errorf("brandOf(%s) = %s, want %s", c.Number, got, c.Brand)
			}
		}
	}
	names := map[string]bool{}
	for _, o := range HolderNameOutcomes() {
		if names[strings.ToUpper(o.HolderName)] {
			t.Errorf("holder name %q listed twice", o.HolderName)
		}
		names[strings.ToUpper(o.HolderName)] = true
	}
}

// Every row of the documented test-card table, through the real client.
func TestTestCards(t *testing.T) {
	for _, tc := range TestCards() {
		t.Run(tc.Number+"_"+string(tc.Behaviour), func(t *testing.T) {
			e := newEnv(t)
			ctx := context.Background()
			pay := func(ctx context.Context) (upstream.PaymentResponse, error) {
				return e.client.Payments(ctx, paymentReq(1000, cardMethod(tc.Number, tc.CVC, "")), "key-"+tc.Number)
			}
			r, err := e.payHeld(t, tc.Behaviour == Hang, pay)
			switch tc.Behaviour {
			case Authorise:
				if err != nil || r.ResultCode != "Authorised" || r.PaymentMethod.Brand != tc.Brand || len(r.PSPReference) != 16 {
					t.Fatalf("r = %+v, err = %v", r, err)
				}
			case Challenge:
				if err != nil || r.ResultCode != "ChallengeShopper" {
					t.Fatalf("r = %+v, err = %v", r, err)
				}
				var a map[string]string
				must(t, json.Unmarshal(r.Action, &a))
				if a["type"] != "threeDS2" || a["subtype"] != "challenge" || a["paymentMethodType"] != "scheme" || a["token"] == "" || a["paymentData"] == "" {
					t.Fatalf("action = %s", r.Action)
				}
				if _, err := base64.StdEncoding.DecodeString(a["token"]); err != nil {
					t.Fatalf("token not base64: %v", err)
				}
			case Redirect:
				if err != nil || r.ResultCode != "RedirectShopper" {
					t.Fatalf("r = %+v, err = %v", r, err)
				}
				var a map[string]string
				json.Unmarshal(r.Action, &a)
				if a["type"] != "redirect" || a["method"] != "GET" || !strings.HasPrefix(a["url"], e.srv.URL+"/_sim/redirect/") || a["paymentMethodType"] != "scheme" || a["paymentData"] != "" {
					t.Fatalf("action = %s", r.Action)
				}
			case Frictionless:
				// Without Options.WebThreeDS2 a frictionless card is authorised at once.
				if err != nil || r.ResultCode != "Authorised" || r.Action != nil {
					t.Fatalf("r = %+v, err = %v", r, err)
				}
			case Fail500:
				ue := apiErr(t, err)
				if ue.HTTPStatus != 500 || !upstream.IsUnavailable(err) {
					t.Fatalf("err = %v", err)
				}
				e.wantPayments(t, 0, "after a 500")
			case Hang:
				if !upstream.IsUnavailable(err) {
					t.Fatalf("err = %v, want unavailable (the client gave up)", err)
				}
				// The upstream processed the request once the client left
				// (HangTimeout is an hour: nothing else ends the hang); a
				// retry with the same key gets the stored answer.
				e.settled.wait(t, "key-"+tc.Number, 1)
				r2, err := pay(ctx)
				if err != nil || r2.ResultCode != "Authorised" {
					t.Fatalf("retry: r = %+v, err = %v", r2, err)
				}
				e.wantPayments(t, 1)
			default:
				t.Fatalf("untested behaviour %s", tc.Behaviour)
			}
		})
	}
}

// Every holder name of the table, with the default Visa card.
func TestHolderNameOutcomes(t *testing.T) {
	e := newEnv(t)
	for _, o := range HolderNameOutcomes() {
		t.Run(o.HolderName, func(t *testing.T) {
			r, err := e.payHeld(t, o.Behaviour == Hang, func(ctx context.Context) (upstream.PaymentResponse, error) {
				return e.client.Payments(ctx, paymentReq(500, cardMethod("4111111111111111", "737", o.HolderName)), "")
			})
			switch o.Behaviour {
			case Fail500:
				if ue := apiErr(t, err); ue.HTTPStatus != 500 {
					t.Fatalf("err = %v", err)
				}
				return
			case Hang:
				if !upstream.IsUnavailable(err) {
					t.Fatalf("err = %v, want unavailable (the client gave up)", err)
				}
				return
			}
			must(t, err)
			if r.ResultCode != o.ResultCode || r.RefusalReason != o.RefusalReason || r.RefusalReasonCode != o.RefusalReasonCode {
				t.Fatalf("r = %+v, want %s/%s/%s", r, o.ResultCode, o.RefusalReason, o.RefusalReasonCode)
			}
			p, _ := e.sim.Payment(r.PSPReference)
			if p.State != o.ResultCode {
				t.Fatalf("state = %s", p.State)
			}
		})
	}
}

func TestHolderNameIsCaseInsensitive(t *testing.T) {
	e := newEnv(t)
	if r := e.pay(t, 100, "declined"); r.ResultCode != "Refused" || r.RefusalReason != "Refused" {
		t.Fatalf("r = %+v", r)
	}
	if r := e.pay(t, 100, "Jane Doe"); r.ResultCode != "Authorised" {
		t.Fatalf("r = %+v", r)
	}
}

func TestCardInputForms(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	plain := json.RawMessage(`{"type":"scheme","number":"4111 1111 1111 1111","expiryMonth":"3","expiryYear":"30","cvc":"737","holderName":"CARD_EXPIRED"}`)
	r, err := e.client.Payments(ctx, paymentReq(100, plain), "")
	if err != nil || r.ResultCode != "Refused" || r.RefusalReason != "Expired Card" {
		t.Fatalf("plain fields: r = %+v, err = %v", r, err)
	}
	noType := json.RawMessage(`{"encryptedCardNumber":"test_5555555555554444","encryptedExpiryMonth":"test_03","encryptedExpiryYear":"test_2030"}`)
	if r, err := e.client.Payments(ctx, paymentReq(100, noType), ""); err != nil || r.PaymentMethod.Brand != "mc" {
		t.Fatalf("no type: r = %+v, err = %v", r, err)
	}
	// An unlisted Luhn-valid card is authorised.
	if r, err := e.client.Payments(ctx, paymentReq(100, cardMethod("4000020000000000", "123", "")), ""); err != nil || r.ResultCode != "Authorised" {
		t.Fatalf("unlisted card: r = %+v, err = %v", r, err)
	}
	// A card that expired (by the injected clock) is refused.
	e.clock.Set(time.Date(2030, 4, 1, 0, 0, 0, 0, time.UTC))
	if r := e.pay(t, 100, ""); r.ResultCode != "Refused" || r.RefusalReasonCode != "6" {
		t.Fatalf("expired: r = %+v", r)
	}
}

func TestCardValidation(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		pm   string
		code string
	}{
		{`{"type":"scheme","encryptedCardNumber":"test_4111111111111112","encryptedExpiryMonth":"test_03","encryptedExpiryYear":"test_2030"}`, "101"},
		{`{"type":"scheme","encryptedCardNumber":"test_41111","encryptedExpiryMonth":"test_03","encryptedExpiryYear":"test_2030"}`, "101"},
		{`{"type":"scheme","encryptedExpiryMonth":"test_03","encryptedExpiryYear":"test_2030"}`, "101"},
		{`{"type":"scheme","encryptedCardNumber":"adyenjs_0_1_25$abc","encryptedExpiryMonth":"test_03","encryptedExpiryYear":"test_2030"}`, "174"},
		{`{"type":"scheme","encryptedCardNumber":"test_4111111111111111","encryptedExpiryMonth":"test_13","encryptedExpiryYear":"test_2030"}`, "129"},
		{`{"type":"scheme","encryptedCardNumber":"test_4111111111111111","encryptedExpiryMonth":"test_03"}`, "129"},
		{`{"type":"scheme","encryptedCardNumber":"test_4111111111111111","encryptedExpiryMonth":"test_03","encryptedExpiryYear":"test_2030","encryptedSecurityCode":"test_7"}`, "103"},
		{`{"type":"scheme","encryptedCardNumber":"test_4111111111111111","encryptedExpiryMonth":"test_03","encryptedExpiryYear":"test_2030","encryptedSecurityCode":"737"}`, "174"},
		{`{"type":"bitcoin"}`, "905"},
		{`{}`, "905"},
		{`{"type":"scheme","storedPaymentMethodId":"NOPE"}`, "000"}, // no shopperReference
	}
	for i, tt := range tests {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			_, err := e.client.Payments(context.Background(), paymentReq(100, json.RawMessage(tt.pm)), "")
			ue := apiErr(t, err)
			if ue.HTTPStatus != 422 || ue.ErrorCode != tt.code || ue.ErrorType != "validation" {
				t.Fatalf("err = %+v, want 422 %s", ue, tt.code)
			}
		})
	}
	e.wantPayments(t, 0, "after rejected requests")
}

func TestOtherPaymentMethods(t *testing.T) {
	e := newEnv(t)
	for typ, want := range map[string]string{"ideal": "RedirectShopper", "paypal": "RedirectShopper", "klarna": "RedirectShopper", "googlepay": "Authorised", "sepadirectdebit": "Authorised"} {
		r, err := e.client.Payments(context.Background(), paymentReq(100, json.RawMessage(`{"type":"`+typ+`"}`)), "")
		if err != nil || r.ResultCode != want || r.PaymentMethod.Type != typ {
			t.Fatalf("%s: r = %+v, err = %v", typ, r, err)
		}
		if want == "RedirectShopper" && !strings.Contains(string(r.Action), `"paymentMethodType":"`+typ+`"`) {
			t.Fatalf("%s: action = %s", typ, r.Action)
		}
	}
}

func TestBrandOf(t *testing.T) {
	for number, want := range map[string]string{
		"4000020000000000": "visa", "5105105105105100": "mc", "2720990000000007": "mc", "378282246310005": "amex",
		"6445644564456445": "discover", "3530111333300000": "jcb", "36006666333344": "diners", "6250946000000016": "cup",
		"5018000000000009": "maestro", "9999999999999995": "card",
	} {
		if got := brandOf(number); got != want {
			t.Errorf("brandOf(%s) = %s, want %s", number, got, want)
		}
	}
}

// Every 3-D Secure and redirect card of the table through the platform's
// web flow: the answers a shopper's browser (or native component) walks
// through, then a successful authentication.
func TestTestCardsWebThreeDS2(t *testing.T) {
	platform := func(o *Options) { o.WebThreeDS2, o.PublishedShapes = true, true }
	for _, tc := range TestCards() {
		var native, redirect []string
		switch {
		case tc.Behaviour == Challenge && tc.ChallengeOnly:
			native, redirect = []string{"ChallengeShopper", "Authorised"}, []string{"RedirectShopper", "Authorised"}
		case tc.Behaviour == Challenge:
			native, redirect = []string{"IdentifyShopper", "ChallengeShopper", "Authorised"}, []string{"RedirectShopper", "Authorised"}
		case tc.Behaviour == Frictionless:
			native, redirect = []string{"IdentifyShopper", "Authorised"}, []string{"RedirectShopper", "Authorised"}
		case tc.Behaviour == Redirect:
			native, redirect = []string{"RedirectShopper", "Authorised"}, []string{"RedirectShopper", "Authorised"}
		default:
			continue
		}
		for _, nativeThreeDS := range []bool{true, false} {
			want := redirect
			if nativeThreeDS {
				want = native
			}
			t.Run(fmt.Sprintf("%s_native=%v", tc.Number, nativeThreeDS), func(t *testing.T) {
				e := newEnv(t, platform)
				req := paymentReq(1000, cardMethod(tc.Number, tc.CVC, ""))
				if nativeThreeDS {
					req.Extra = map[string]json.RawMessage{"authenticationData": json.RawMessage(`{"threeDSRequestData":{"nativeThreeDS":"preferred"}}`)}
				}
				r, err := e.client.Payments(context.Background(), req, "")
				must(t, err)
				var got []string
				for i := 0; ; i++ {
					got = append(got, r.ResultCode)
					if r.Action == nil || i > 3 {
						break
					}
					r = e.details(t, r.Action, true)
				}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("answers = %v, want %v", got, want)
				}
			})
		}
	}
}

// A wrong CVC on a test card gives the generic DECLINED refusal, as the
// platform documents, whatever the holder name asks for; a card with no
// documented CVC accepts any.
func TestTestCardWrongCVC(t *testing.T) {
	for _, tc := range TestCards() {
		if tc.Behaviour == Fail500 || tc.Behaviour == Hang {
			continue
		}
		t.Run(tc.Number, func(t *testing.T) {
			e := newEnv(t)
			wrong := "123"
			if tc.CVC == "123" {
				wrong = "456"
			}
			for _, holder := range []string{"", "CARD_EXPIRED"} {
				r, err := e.client.Payments(context.Background(), paymentReq(1000, cardMethod(tc.Number, wrong, holder)), "")
				must(t, err)
				if r.Action != nil {
					r = e.details(t, r.Action, true)
				}
				if tc.CVC == "" {
					if r.ResultCode != "Authorised" && holder == "" {
						t.Fatalf("no documented CVC: %+v", r)
					}
					continue
				}
				if r.ResultCode != "Refused" || r.RefusalReason != "Refused" || r.RefusalReasonCode != "2" {
					t.Fatalf("holder %q: %+v, want Refused / Refused (2)", holder, r)
				}
			}
		})
	}
}

// The platform's holder-name format with a scheme response and raw refusal
// reason after the response name.
func TestHolderNameWithRawRefusalReason(t *testing.T) {
	e := newEnv(t)
	for name, want := range map[string]string{"DECLINED : 06 : ERROR": "2", "NOT_ENOUGH_BALANCE : 51 : Insufficient funds": "12", "card_expired:54": "6"} {
		if r := e.pay(t, 100, name); r.ResultCode != "Refused" || r.RefusalReasonCode != want {
			t.Fatalf("%q: %+v, want code %s", name, r, want)
		}
	}
	if r := e.pay(t, 100, "J. De Tester"); r.ResultCode != "Authorised" {
		t.Fatalf("plain name: %+v", r)
	}
}

// A payment keeps its request without card data.
func TestWithoutCardData(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"amount":1,"paymentMethod":{"type":"scheme","encryptedCardNumber":"test_4111111111111111","encryptedExpiryMonth":"test_03","encryptedExpiryYear":"test_2030","encryptedSecurityCode":"test_737","holderName":"J"}}`,
			`{"amount":1,"paymentMethod":{"encryptedCardNumber":"[redacted]","encryptedExpiryMonth":"[redacted]","encryptedExpiryYear":"[redacted]","encryptedSecurityCode":"[redacted]","holderName":"J","type":"scheme"}}`},
		{`{"paymentMethod":{"type":"scheme","number":"4111111111111111","expiryMonth":"03","expiryYear":"2030","cvc":"737"}}`,
			`{"paymentMethod":{"cvc":"[redacted]","expiryMonth":"[redacted]","expiryYear":"[redacted]","number":"[redacted]","type":"scheme"}}`},
		{`{"paymentMethod": {"type":"scheme","storedPaymentMethodId":"T1"}}`, `{"paymentMethod": {"type":"scheme","storedPaymentMethodId":"T1"}}`},
		{`{"amount":1}`, `{"amount":1}`},
	} {
		if got := string(withoutCardData(json.RawMessage(tc.in))); got != tc.want {
			t.Errorf("withoutCardData(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}
