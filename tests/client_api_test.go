package tests

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/yp/paysvc/shared/client"
	"github.com/yp/paysvc/shared/provision"
	"github.com/yp/paysvc/shared/testenv"
)

// envClient is a client of an in-process service; testenv checks every
// exchange against docs/openapi.yaml.
func envClient(t *testing.T, e *testenv.Env, key string) *client.Client {
	return client.New(c2url(t, e), e.Keys[key], client.WithRetries(0, 0, 0))
}

// Every errorCode docs/openapi.yaml declares has its client.ErrorCode
// constant, whose comment names the statuses the document gives it, and
// the client has no constant the document does not declare. (The client's
// module cannot read the service's document; this test reads the client's
// source.)
func TestClientErrorCodesCoverOpenAPI(t *testing.T) {
	checker := repoChecker(t)
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filepath.Join("..", "shared", "client", "errors.go"), nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	constants := map[string]string{} // code -> its comment
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			v := spec.(*ast.ValueSpec)
			if id, ok := v.Type.(*ast.Ident); !ok || id.Name != "ErrorCode" || len(v.Values) != 1 {
				continue
			}
			lit, ok := v.Values[0].(*ast.BasicLit)
			if !ok {
				t.Fatalf("%s: not a literal", v.Names[0])
			}
			code, _ := strconv.Unquote(lit.Value)
			constants[code] = v.Comment.Text()
		}
	}
	declared := checker.ErrorCodes()
	for _, code := range declared {
		comment, ok := constants[code]
		if !ok {
			t.Errorf("docs/openapi.yaml declares %s: the client has no ErrorCode constant for it", code)
			continue
		}
		statuses := regexp.MustCompile(`\b[1-5][0-9][0-9]\b`).FindAllString(comment, -1)
		if len(statuses) == 0 {
			t.Errorf("the client's %s: its comment %q names no status", code, comment)
		}
		for _, st := range statuses {
			if n, _ := strconv.Atoi(st); !checker.Documents(n, code) {
				t.Errorf("the client's %s: docs/openapi.yaml documents no %d answer with it", code, n)
			}
		}
	}
	for code := range constants {
		if !slices.Contains(declared, code) {
			t.Errorf("the client has %s, which docs/openapi.yaml does not declare", code)
		}
	}
}

func TestClientEveryEndpoint(t *testing.T) {
	e := testenv.New(t)
	c := envClient(t, e, "A")
	ctx := context.Background()
	eur := func(v int64) client.Amount { return client.Amount{Value: v, Currency: "EUR"} }

	cfg, err := c.Config(ctx)
	if err != nil || cfg.ClientToken == "" || cfg.Environment != "test" {
		t.Fatalf("config %+v %v", cfg, err)
	}
	ses, err := c.CreateSession(ctx, testenv.SiteA, client.SessionParams{Amount: eur(1000), ReturnURL: "https://shop.example/r", Reference: "order-1"})
	if err != nil || ses.ID == "" || ses.SessionData == "" || ses.Reference != "order-1" {
		t.Fatalf("session %+v %v", ses, err)
	}
	pms, err := c.PaymentMethods(ctx, testenv.SiteA, client.PaymentMethodsParams{Amount: eur(1000), Channel: "Web"})
	if err != nil || len(pms.PaymentMethods) == 0 {
		t.Fatalf("payment methods %+v %v", pms, err)
	}
	// 3-D Secure: a challenge, its details, then Authorised.
	// A pre-authorisation, so that its amount can be updated.
	pay, err := c.CreatePayment(ctx, testenv.SiteA, client.PaymentParams{Amount: eur(1000), PaymentMethod: card("5454545454545454", "737", ""), ReturnURL: "https://shop.example/r", Reference: "order-2",
		AdditionalData: map[string]string{"authorisationType": "PreAuth"}})
	if err != nil || pay.ResultCode != client.ResultChallengeShopper || pay.Action == nil || pay.Action.Type != client.ActionThreeDS2 ||
		pay.Action.PaymentData == "" || len(pay.Action.Raw) == 0 || pay.MerchantReference != "order-2" {
		t.Fatalf("payment %+v %v", pay, err)
	}
	details := detailsFor(t, pay.Action.Raw, true)
	done, err := c.SubmitDetails(ctx, testenv.SiteA, client.DetailsParams{Details: details, Reference: pay.MerchantReference})
	if err != nil || done.ResultCode != client.ResultAuthorised || done.PSPReference == "" {
		t.Fatalf("details %+v %v", done, err)
	}
	psp := done.PSPReference
	upd, err := c.UpdateAmount(ctx, testenv.SiteA, psp, client.AmountUpdateParams{Amount: eur(800)})
	if err != nil || upd.Status != "received" || upd.PaymentPSPReference != psp {
		t.Fatalf("amount update %+v %v", upd, err)
	}
	capt, err := c.Capture(ctx, testenv.SiteA, psp, client.CaptureParams{Amount: eur(500), Reference: "cap-1"})
	if err != nil || capt.Status != "received" || capt.PaymentPSPReference != psp {
		t.Fatalf("capture %+v %v", capt, err)
	}
	// The rest of the authorisation (300) cancelled; the captured 500
	// stays refundable, and the reversal refunds it.
	canc, err := c.Cancel(ctx, testenv.SiteA, psp, client.CancelParams{Reference: "cancel-1"})
	if err != nil || canc.Status != "received" || canc.PaymentPSPReference != psp {
		t.Fatalf("cancel %+v %v", canc, err)
	}
	rev, err := c.Reverse(ctx, testenv.SiteA, psp, client.ReversalParams{Reference: "rev-1"})
	if err != nil || rev.Status != "received" {
		t.Fatalf("reversal %+v %v", rev, err)
	}

	// Errors are typed: status, code, fields and the request id.
	_, err = c.Capture(ctx, testenv.SiteA, psp, client.CaptureParams{Amount: client.Amount{Value: 1, Currency: "eur"}})
	var apiErr *client.Error
	if !errors.As(err, &apiErr) || apiErr.Status != 400 || apiErr.Code != client.CodeInvalidRequest || apiErr.RequestID == "" ||
		!errors.Is(err, client.ErrInvalidRequest) || apiErr.IdempotencyKey == "" ||
		!slices.ContainsFunc(apiErr.Fields, func(f client.FieldError) bool { return f.Field == "amount.currency" }) {
		t.Fatalf("invalid capture: %#v", err)
	}
	_, err = c.Capture(ctx, testenv.SiteA, "NOSUCHPSP", client.CaptureParams{Amount: eur(1)})
	if !errors.As(err, &apiErr) || apiErr.Status != 404 || !errors.Is(err, client.CodePaymentNotFound) || !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("unknown payment: %v", err)
	}
	_, err = c.DeleteStoredPaymentMethod(ctx, testenv.SiteA, "NOSUCHTOKEN", "shopper-1")
	if !errors.As(err, &apiErr) || apiErr.Code != "yp_3006" {
		t.Fatalf("delete unknown token: %v", err)
	}
	if _, err := client.New(c2url(t, e), "yp_test_nope").Config(ctx); !errors.Is(err, client.ErrUnauthorized) || !errors.Is(err, client.CodeUnauthorized) {
		t.Fatalf("bad key: %v", err)
	}
}

func c2url(t *testing.T, e *testenv.Env) string {
	srv := httptest.NewServer(e.Handler)
	t.Cleanup(srv.Close)
	return srv.URL
}

// A caller's Idempotency-Key is sent as is: the second call is a replay.
func TestClientCallerIdempotencyKey(t *testing.T) {
	e := testenv.New(t)
	c := envClient(t, e, "A")
	ctx := context.Background()
	p := client.SessionParams{Amount: client.Amount{Value: 100, Currency: "EUR"}, ReturnURL: "https://shop.example/r"}
	a, err := c.CreateSession(ctx, testenv.SiteA, p, client.WithIdempotencyKey("order-77"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.CreateSession(ctx, testenv.SiteA, p, client.WithIdempotencyKey("order-77"))
	if err != nil || a.ID != b.ID {
		t.Fatalf("replay %+v %+v %v", a, b, err)
	}
	// Meta tells the replay from the call that reached the platform.
	if a.Meta.Replayed || !b.Meta.Replayed || b.Meta.IdempotencyKey != "order-77" || a.Meta.RequestID == "" || b.Meta.RequestID == a.Meta.RequestID {
		t.Fatalf("meta %+v, then %+v", a.Meta, b.Meta)
	}
	p.Amount.Value = 200
	if _, err := c.CreateSession(ctx, testenv.SiteA, p, client.WithIdempotencyKey("order-77")); !errors.Is(err, client.ErrIdempotencyMismatch) {
		t.Fatalf("the key with another request: %v", err)
	}
	if n := len(e.Upstream.Requests("/sessions")); n != 1 {
		t.Fatalf("%d upstream session calls", n)
	}
}

// Refunds, the payment lookup, the event history, deliveries, retry and the
// webhook test, through the typed client against the in-process service
// (every exchange checked against docs/openapi.yaml).
func TestClientRefundsLookupsAndWebhooks(t *testing.T) {
	e := testenv.New(t)
	ctx := context.Background()
	eur := func(v int64) client.Amount { return client.Amount{Value: v, Currency: "EUR"} }
	if _, _, err := (&provision.Provisioner{Store: e.Store, Clock: e.Clock}).PutSubscription(ctx,
		provision.SubscriptionSpec{ID: "sub_a", MerchantID: testenv.MerchantA, URL: "https://a.example/hooks"}); err != nil {
		t.Fatal(err)
	}
	c := envClient(t, e, "A")
	pay, err := c.CreatePayment(ctx, testenv.SiteA, client.PaymentParams{Amount: eur(1000), PaymentMethod: card("4111111111111111", "737", ""), ReturnURL: "https://shop.example/r", Reference: "order-r"})
	if err != nil {
		t.Fatal(err)
	}
	psp := pay.PSPReference
	if _, err := c.Capture(ctx, testenv.SiteA, psp, client.CaptureParams{Amount: eur(1000)}); err != nil {
		t.Fatal(err)
	}
	rf, err := c.Refund(ctx, testenv.SiteA, psp, client.RefundParams{Amount: eur(300), Reference: "rma-1",
		LineItems: []client.LineItem{{ID: "sku-1", Description: "Shoe", Quantity: 1}}})
	if err != nil || rf.Status != "received" || rf.PaymentPSPReference != psp {
		t.Fatalf("refund %+v, %v", rf, err)
	}
	_, err = c.Refund(ctx, testenv.SiteA, psp, client.RefundParams{Amount: eur(701)})
	var apiErr *client.Error
	if !errors.As(err, &apiErr) || apiErr.Status != 400 || apiErr.Code != "yp_2002" {
		t.Fatalf("over-refund: %v", err)
	}
	p, err := c.GetPayment(ctx, testenv.SiteA, psp)
	if err != nil || p.RefundsInFlight.Value != 300 || p.RefundableAmount.Value != 700 || p.PaymentMethod == nil || len(p.Timeline) == 0 {
		t.Fatalf("payment %+v, %v", p, err)
	}
	e.Notify()
	evs, err := c.ListEvents(ctx, client.EventFilter{ListParams: client.ListParams{Limit: 2}, PSPReference: psp})
	if err != nil || len(evs.Data) != 2 || !evs.HasMore || evs.Data[0].EventCode != "REFUND" {
		t.Fatalf("events %+v, %v", evs, err)
	}
	rest, err := c.ListEvents(ctx, client.EventFilter{ListParams: client.ListParams{StartingAfter: evs.Data[1].ID}, PSPReference: psp})
	if err != nil || len(rest.Data) != 1 || rest.Data[0].EventCode != "AUTHORISATION" {
		t.Fatalf("events page 2 %+v, %v", rest, err)
	}
	ds, err := c.ListWebhookDeliveries(ctx, client.DeliveryFilter{Status: "pending"})
	if err != nil || len(ds.Data) != 3 {
		t.Fatalf("deliveries %+v, %v", ds, err)
	}
	// The iterators walk the same listings a page at a time.
	var codes []string
	for ev, err := range c.AllEvents(ctx, client.EventFilter{ListParams: client.ListParams{Limit: 1}, PSPReference: psp}) {
		if err != nil {
			t.Fatal(err)
		}
		codes = append(codes, ev.EventCode)
	}
	if !slices.Equal(codes, []string{evs.Data[0].EventCode, evs.Data[1].EventCode, "AUTHORISATION"}) {
		t.Fatalf("AllEvents: %v", codes)
	}
	var ids []string
	for d, err := range c.AllWebhookDeliveries(ctx, client.DeliveryFilter{ListParams: client.ListParams{Limit: 2}, Status: "pending"}) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, d.ID)
	}
	if !slices.Equal(ids, []string{ds.Data[0].ID, ds.Data[1].ID, ds.Data[2].ID}) {
		t.Fatalf("AllWebhookDeliveries: %v", ids)
	}
	_, err = c.RetryWebhookDelivery(ctx, ds.Data[0].ID)
	if !errors.As(err, &apiErr) || apiErr.Status != 400 {
		t.Fatalf("retry of a pending delivery: %v", err)
	}
	if _, err := c.RetryWebhookDelivery(ctx, "msg_nope"); !errors.As(err, &apiErr) || apiErr.Code != "yp_3007" {
		t.Fatalf("retry of an unknown delivery: %v", err)
	}
	rep, err := c.TestWebhooks(ctx, "")
	if err != nil || rep.EventCode != "paysvc.webhook.test" || len(rep.Results) != 1 || !rep.Results[0].Delivered {
		t.Fatalf("webhook test %+v, %v", rep, err)
	}
}
