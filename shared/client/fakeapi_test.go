package client_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"sync"

	"github.com/yp/paysvc/shared/client"
)

// exampleClient is the client the examples use: of the server at
// PAYSVC_EXAMPLE_URL with the key PAYSVC_EXAMPLE_KEY when they are set (the
// service's tests run the examples so against the local server, in
// tests/client_examples_test.go), else of fakeAPI, so that they run
// offline.
func exampleClient() (*client.Client, func()) {
	if u := os.Getenv("PAYSVC_EXAMPLE_URL"); u != "" {
		return client.New(u, os.Getenv("PAYSVC_EXAMPLE_KEY")), func() {}
	}
	srv := httptest.NewServer(newFakeAPI())
	return client.New(srv.URL, "yp_test_example"), srv.Close
}

// fakeAPI answers the examples' calls as the service does (a site, card
// payments with one 3-D Secure card, captures, sessions, Idempotency-Keys,
// the event history), and nothing more.
type fakeAPI struct {
	mux      *http.ServeMux
	mu       sync.Mutex
	seq      int
	stored   map[string]storedAnswer // by Idempotency-Key
	payments map[string]string       // pspReference -> reference
	actions  map[string]string       // paymentData -> pspReference
}

type storedAnswer struct {
	request string
	status  int
	body    []byte
}

func newFakeAPI() *fakeAPI {
	f := &fakeAPI{mux: http.NewServeMux(), stored: map[string]storedAnswer{}, payments: map[string]string{}, actions: map[string]string{}}
	f.mux.HandleFunc("POST /v1/ecom/site_demo/sessions", f.session)
	f.mux.HandleFunc("POST /v1/ecom/site_demo/payments", f.payment)
	f.mux.HandleFunc("POST /v1/ecom/site_demo/payments/details", f.details)
	f.mux.HandleFunc("POST /v1/ecom/site_demo/payments/{psp}/captures", f.capture)
	f.mux.HandleFunc("GET /v1/ecom/site_demo/payments/{psp}", f.lookup)
	f.mux.HandleFunc("GET /v1/ecom/events", f.events)
	return f
}

// ServeHTTP stores the answer of a POST under its Idempotency-Key and
// replays it to the same request with that key.
func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seq++
	w.Header().Set("X-Request-Id", fmt.Sprintf("req_%d", f.seq))
	w.Header().Set("Content-Type", "application/json")
	key := r.Header.Get("Idempotency-Key")
	if r.Method != http.MethodPost || key == "" {
		f.mux.ServeHTTP(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	request := r.URL.Path + " " + string(body)
	if s, ok := f.stored[key]; ok {
		if s.request != request {
			fakeError(w, http.StatusUnprocessableEntity, client.CodeIdempotencyMismatch, "Idempotency-Key reused with another request")
			return
		}
		w.Header().Set("Idempotent-Replayed", "true")
		w.WriteHeader(s.status)
		_, _ = w.Write(s.body)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	rec := httptest.NewRecorder()
	f.mux.ServeHTTP(rec, r)
	f.stored[key] = storedAnswer{request, rec.Code, rec.Body.Bytes()}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(rec.Body.Bytes())
}

func fakeError(w http.ResponseWriter, status int, code client.ErrorCode, msg string, fields ...client.FieldError) {
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(client.Error{Code: code, Message: msg, Fields: fields})
}

func fakeAnswer(w http.ResponseWriter, v any) { _ = json.NewEncoder(w).Encode(v) }

var currency = regexp.MustCompile(`^[A-Z]{3}$`)

// decode reads a request's body into v and checks its amount as the service
// does; false: the answer is written.
func decode(w http.ResponseWriter, r *http.Request, v any, amount func() client.Amount) bool {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		fakeError(w, http.StatusBadRequest, client.CodeInvalidRequest, "invalid JSON")
		return false
	}
	if amount != nil && !currency.MatchString(amount().Currency) {
		fakeError(w, http.StatusBadRequest, client.CodeInvalidRequest, "invalid request",
			client.FieldError{Field: "amount.currency", Message: "must be an ISO 4217 code (three capital letters)"})
		return false
	}
	return true
}

func (f *fakeAPI) newPSP() string { return fmt.Sprintf("FAKE%012d", f.seq) }

func (f *fakeAPI) session(w http.ResponseWriter, r *http.Request) {
	var p client.SessionParams
	if decode(w, r, &p, func() client.Amount { return p.Amount }) {
		fakeAnswer(w, map[string]string{"id": "CS" + f.newPSP(), "sessionData": "Ab02b4c0!fake", "reference": p.Reference})
	}
}

func (f *fakeAPI) payment(w http.ResponseWriter, r *http.Request) {
	var p client.PaymentParams
	if !decode(w, r, &p, func() client.Amount { return p.Amount }) {
		return
	}
	var card struct {
		Number string `json:"encryptedCardNumber"`
	}
	_ = json.Unmarshal(p.PaymentMethod, &card)
	psp := f.newPSP()
	f.payments[psp] = p.Reference
	if card.Number != "test_4212345678910006" { // the challenge-only 3-D Secure card
		fakeAnswer(w, client.PaymentResult{ResultCode: client.ResultAuthorised, PSPReference: psp, MerchantReference: p.Reference})
		return
	}
	data := "Ab02b4c0!" + base64.StdEncoding.EncodeToString([]byte(psp))
	f.actions[data] = psp
	fakeAnswer(w, client.PaymentResult{ResultCode: client.ResultChallengeShopper, MerchantReference: p.Reference, Action: &client.Action{
		Type: client.ActionThreeDS2, Subtype: "challenge", PaymentMethodType: "scheme", PaymentData: data, Token: "ZmFrZQ=="}})
}

func (f *fakeAPI) details(w http.ResponseWriter, r *http.Request) {
	var p struct {
		Details struct {
			ThreeDSResult string `json:"threeDSResult"`
		} `json:"details"`
		PaymentData string `json:"paymentData"`
	}
	if !decode(w, r, &p, nil) {
		return
	}
	psp, ok := f.actions[p.PaymentData]
	if !ok {
		fakeError(w, http.StatusBadRequest, client.CodeInvalidRequest, "no open action for this paymentData")
		return
	}
	delete(f.actions, p.PaymentData)
	var res struct {
		TransStatus string `json:"transStatus"`
	}
	raw, _ := base64.StdEncoding.DecodeString(p.Details.ThreeDSResult)
	_ = json.Unmarshal(raw, &res)
	code := client.ResultRefused
	if res.TransStatus == "Y" {
		code = client.ResultAuthorised
	}
	fakeAnswer(w, client.PaymentResult{ResultCode: code, PSPReference: psp, MerchantReference: f.payments[psp]})
}

func (f *fakeAPI) capture(w http.ResponseWriter, r *http.Request) {
	var p client.CaptureParams
	if !decode(w, r, &p, func() client.Amount { return p.Amount }) {
		return
	}
	psp := r.PathValue("psp")
	if _, ok := f.payments[psp]; !ok {
		fakeError(w, http.StatusNotFound, client.CodePaymentNotFound, "no such payment")
		return
	}
	fakeAnswer(w, client.Modification{PSPReference: f.newPSP(), Status: "received", PaymentPSPReference: psp, Reference: p.Reference})
}

func (f *fakeAPI) lookup(w http.ResponseWriter, r *http.Request) {
	fakeError(w, http.StatusNotFound, client.CodePaymentNotFound, "no such payment") // the examples look up none of theirs
}

// events serves five AUTHORISATION events, newest first, paged.
func (f *fakeAPI) events(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, _ := strconv.Atoi(q.Get("limit"))
	if limit == 0 {
		limit = 10
	}
	next := 5
	if a := q.Get("startingAfter"); a != "" {
		_, _ = fmt.Sscanf(a, "evt_%d", &next)
		next--
	}
	page := client.EventPage{Data: []client.Event{}}
	for i := next; i > 0 && len(page.Data) < limit; i-- {
		page.Data = append(page.Data, client.Event{ID: fmt.Sprintf("evt_%d", i), EventCode: "AUTHORISATION",
			PSPReference: fmt.Sprintf("FAKE%012d", i), PaymentPSPReference: fmt.Sprintf("FAKE%012d", i)})
	}
	page.HasMore = next > len(page.Data)
	fakeAnswer(w, page)
}
