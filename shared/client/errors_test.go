package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/yp/paysvc/shared/client"
)

// errors.Is matches a failed call by its code and by the classes it
// belongs to, through any wrapping.
func TestErrorIs(t *testing.T) {
	all := []error{client.ErrUnauthorized, client.ErrForbidden, client.ErrInvalidRequest, client.ErrNotFound,
		client.ErrIdempotencyMismatch, client.ErrIdempotencyInFlight, client.ErrPaymentBusy, client.ErrRateLimited,
		client.ErrUpstream, client.ErrServer}
	for _, tc := range []struct {
		status int
		code   client.ErrorCode
		is     []error // every other class must not match
	}{
		{401, client.CodeUnauthorized, []error{client.ErrUnauthorized}},
		{403, client.CodeForbidden, []error{client.ErrForbidden}},
		{400, client.CodeInvalidRequest, []error{client.ErrInvalidRequest}},
		{413, client.CodeInvalidRequest, []error{client.ErrInvalidRequest}},
		{400, client.CodeMalformedSiteID, []error{client.ErrInvalidRequest}},
		{422, client.CodeIdempotencyMismatch, []error{client.ErrIdempotencyMismatch}},
		{409, client.CodeIdempotencyInFlight, []error{client.ErrIdempotencyInFlight}},
		{409, client.CodePaymentBusy, []error{client.ErrPaymentBusy}},
		{409, client.CodeSiteNotFound, nil},
		{404, client.CodeSiteNotFound, []error{client.ErrNotFound}},
		{404, client.CodePaymentNotFound, []error{client.ErrNotFound}},
		{404, client.CodeNoSuchEndpoint, []error{client.ErrNotFound}},
		{429, client.CodeRateLimited, []error{client.ErrRateLimited}},
		{500, client.CodeCaptureFailed, []error{client.ErrUpstream, client.ErrServer}},
		{500, client.CodeRefundFailed, []error{client.ErrUpstream, client.ErrServer}},
		{500, client.CodeInternal, []error{client.ErrServer}},
		{502, "", []error{client.ErrServer}}, // a gateway's own answer, no errorCode
	} {
		t.Run(fmt.Sprintf("%d %s", tc.status, tc.code), func(t *testing.T) {
			err := fmt.Errorf("order 7: %w", &client.Error{Status: tc.status, Code: tc.code})
			if tc.code != "" && !errors.Is(err, tc.code) {
				t.Errorf("not Is its code %s", tc.code)
			}
			if errors.Is(err, client.ErrorCode("yp_0000")) {
				t.Error("Is another code")
			}
			for _, class := range all {
				if got, want := errors.Is(err, class), slices.Contains(tc.is, class); got != want {
					t.Errorf("errors.Is(%v) = %v, want %v", class, got, want)
				}
			}
		})
	}
	if errors.Is(errors.New("network"), client.ErrServer) || errors.Is(client.ErrNotFound, client.CodePaymentNotFound) {
		t.Error("a class or code matched what is not an *Error")
	}
}

func TestErrorMessage(t *testing.T) {
	fields := []client.FieldError{{Field: "amount.currency", Message: "must be 3 capital letters"}, {Field: "returnUrl", Message: "required"}}
	for _, tc := range []struct {
		e    client.Error
		want string
	}{
		{client.Error{Status: 404, Code: client.CodePaymentNotFound, Message: "no such payment"},
			"paysvc: 404 yp_3006: no such payment"},
		{client.Error{Status: 400, Code: client.CodeInvalidRequest, Message: "invalid request", Fields: fields, RequestID: "req_1"},
			"paysvc: 400 yp_2002: invalid request (2 fields, request req_1)"},
		{client.Error{Status: 400, Code: client.CodeInvalidRequest, Message: "invalid request", Fields: fields[:1], Replayed: true, RequestID: "req_2"},
			"paysvc: 400 yp_2002: invalid request (1 field, replayed, request req_2)"},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("%q, want %q", got, tc.want)
		}
	}
}

// Every result carries the answer's request id, the Idempotency-Key sent
// and whether the answer was a replay; a failed call's *Error the same.
// Every request says who sends it.
func TestClientMeta(t *testing.T) {
	replayed := func(w http.ResponseWriter) { w.Header().Set("Idempotent-Replayed", "true"); captured(w) }
	config := func(w http.ResponseWriter) { _, _ = w.Write([]byte(`{"clientToken":"c","environment":"test"}`)) }
	s := &scripted{answers: []func(http.ResponseWriter){captured, replayed, fail(400, "yp_2002", "Idempotent-Replayed", "true"), config}}
	srv := httptest.NewServer(s)
	defer srv.Close()
	c := client.New(srv.URL, "yp_test_k", client.WithKeyGenerator(func() string { return "idk_generated" }))
	ctx := context.Background()
	p := client.CaptureParams{Amount: client.Amount{Value: 1, Currency: "EUR"}}

	m, err := c.Capture(ctx, "s", "PSP", p)
	if err != nil || m.Meta.StatusCode != 200 || m.Meta.RequestID != "req_1" || m.Meta.IdempotencyKey != "idk_generated" || m.Meta.Replayed {
		t.Fatalf("first call: %+v %v", m.Meta, err)
	}
	m, err = c.Capture(ctx, "s", "PSP", p, client.WithIdempotencyKey("ship-7"))
	if err != nil || m.Meta.RequestID != "req_2" || m.Meta.IdempotencyKey != "ship-7" || !m.Meta.Replayed || m.PSPReference != "CAP" {
		t.Fatalf("replay: %+v %v", m.Meta, err)
	}
	_, err = c.Capture(ctx, "s", "PSP", p, client.WithIdempotencyKey("ship-8"))
	var e *client.Error
	if !errors.As(err, &e) || !e.Replayed || e.IdempotencyKey != "ship-8" || e.RequestID != "req_3" {
		t.Fatalf("replayed failure: %#v", err)
	}
	cfg, err := c.Config(ctx)
	if err != nil || cfg.Meta.RequestID != "req_4" || cfg.Meta.IdempotencyKey != "" || s.keys[3] != "" {
		t.Fatalf("a GET: %+v %v, Idempotency-Key %q", cfg.Meta, err, s.keys[3])
	}
	if client.UserAgent != "paysvc-go/"+client.Version {
		t.Errorf("UserAgent %q", client.UserAgent)
	}
	for i, ua := range s.agents {
		if ua != client.UserAgent {
			t.Errorf("request %d User-Agent %q", i+1, ua)
		}
	}
}
