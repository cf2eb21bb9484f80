// Package upstreamapi validates traffic with the checkout platform against
// the platform's own published OpenAPI 3.1 documents (testdata/: Checkout
// API v71 and the standard notification webhooks, MIT licensed, origin in
// testdata/README.md): requests the upstream client sends, answers the
// simulator gives and notifications it sends. It is for tests: wrap a
// client's transport with Transport, a simulator with Handler, and check
// notification bodies with Notification; a Recorder collects violations.
package upstreamapi

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	verrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/helpers"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	"github.com/pb33f/libopenapi/datamodel/high/base"
)

//go:embed testdata/CheckoutService-v71.json testdata/Webhooks-v1.json
var docs embed.FS

// Validator checks messages against the two documents. It is safe for
// concurrent use.
type Validator struct {
	mu       sync.Mutex // libopenapi-validator's caches are not documented as concurrency-safe
	checkout validator.Validator
	errBody  *base.Schema            // the Checkout document's ServiceError
	webhooks map[string]*base.Schema // eventCode → notification request schema
	schemas  schema_validation.SchemaValidator
}

// Load returns the Validator of the embedded documents, built once per
// process (building the models takes a moment).
var Load = sync.OnceValues(load)

func load() (*Validator, error) {
	spec, err := docs.ReadFile("testdata/CheckoutService-v71.json")
	if err != nil {
		return nil, err
	}
	if spec, err = normaliseNullable(spec); err != nil {
		return nil, err
	}
	doc, err := libopenapi.NewDocument(spec)
	if err != nil {
		return nil, fmt.Errorf("upstreamapi: checkout document: %w", err)
	}
	model, err := doc.BuildV3Model()
	if err != nil {
		return nil, fmt.Errorf("upstreamapi: checkout model: %w", err)
	}
	se, ok := model.Model.Components.Schemas.Get("ServiceError")
	if !ok {
		return nil, errors.New("upstreamapi: the checkout document defines no ServiceError")
	}
	// Security is not checked: the documents' API-key scheme is met by the
	// X-API-Key header, which tests exercise on their own.
	v := validator.NewValidatorFromV3Model(&model.Model, config.WithoutSecurityValidation())
	hooks, err := webhookSchemas()
	if err != nil {
		return nil, err
	}
	return &Validator{checkout: v, errBody: se.Schema(), webhooks: hooks, schemas: schema_validation.NewSchemaValidator()}, nil
}

// webhookSchemas maps each event code to the request schema the webhook
// document gives its notification.
func webhookSchemas() (map[string]*base.Schema, error) {
	spec, err := docs.ReadFile("testdata/Webhooks-v1.json")
	if err != nil {
		return nil, err
	}
	doc, err := libopenapi.NewDocument(spec)
	if err != nil {
		return nil, fmt.Errorf("upstreamapi: webhook document: %w", err)
	}
	model, err := doc.BuildV3Model()
	if err != nil {
		return nil, fmt.Errorf("upstreamapi: webhook model: %w", err)
	}
	out := map[string]*base.Schema{}
	for name, item := range model.Model.Webhooks.FromOldest() {
		if item.Post == nil || item.Post.RequestBody == nil {
			continue
		}
		mt, ok := item.Post.RequestBody.Content.Get("application/json")
		if !ok || mt.Schema == nil {
			continue
		}
		schema := mt.Schema.Schema()
		code := strings.TrimPrefix(name, "/")
		out[code] = schema
		inline, _ := schema.RenderInline() // references resolved
		listsHMAC[code] = bytes.Contains(inline, []byte(`"hmacSignature"`))
	}
	if len(out) == 0 {
		return nil, errors.New("upstreamapi: the webhook document defines no notifications")
	}
	return out, nil
}

// Request validates an API request (path, parameters, body) against the
// Checkout document; r's body is read and restored.
func (v *Validator) Request(r *http.Request) []string {
	body, err := readAndRestore(&r.Body)
	if err != nil {
		return []string{"reading the request body: " + err.Error()}
	}
	clone := r.Clone(r.Context())
	clone.Body = io.NopCloser(bytes.NewReader(body))
	v.mu.Lock()
	defer v.mu.Unlock()
	_, errs := v.checkout.ValidateHttpRequestSync(clone)
	return describe(errs)
}

// Response validates the answer to r against the Checkout document; the
// response body is read and restored.
func (v *Validator) Response(r *http.Request, resp *http.Response) []string {
	body, err := readAndRestore(&resp.Body)
	if err != nil {
		return []string{"reading the response body: " + err.Error()}
	}
	clone := *resp
	clone.Body = io.NopCloser(bytes.NewReader(body))
	req := r.Clone(r.Context())
	req.Body = http.NoBody
	v.mu.Lock()
	defer v.mu.Unlock()
	_, errs := v.checkout.ValidateHttpResponse(req, &clone)
	// The document lists only some error statuses per operation (DELETE
	// /storedPaymentMethods only 204, /sessions only 201), yet the platform
	// answers every operation's errors with the same ServiceError body: an
	// error status the operation does not list is checked against
	// ServiceError instead of being reported as undefined.
	if resp.StatusCode >= 400 && len(errs) == 1 && errs[0].ValidationSubType == helpers.ResponseBodyResponseCode {
		_, errs = v.schemas.ValidateSchemaBytes(v.errBody, body)
	}
	return describe(errs)
}

// Notification validates one standard notification body against the
// webhook document's schema for its event code (every item must have the
// same event code, as the platform sends one item per POST).
//
// Before validating, additionalData keys "metadata.<key>" are folded into
// one "metadata" object: the document describes them as "key-value pairs
// provided in the request, prefixed with 'metadata.'" — the wire form —
// but models them as an object property named "metadata" (its
// additionalData schemas forbid other keys), so the wire form can only be
// checked against the model after folding.
//
// The one exemption: "hmacSignature" is accepted in the additionalData of
// every event. The platform signs every notification when an HMAC key is
// set (and the receiver requires it), but the document's generic
// NotificationAdditionalData, used for OFFER_CLOSED and a few others, omits
// the key its event-specific schemas all list.
//
// No oneOf needs an exemption: the action and payment-method oneOfs of the
// Checkout document are told apart by their "type" enums.
func (v *Validator) Notification(body []byte) []string {
	code, err := eventCode(body)
	if err != nil {
		return []string{err.Error()}
	}
	schema := v.webhooks[code]
	if schema == nil {
		return []string{"the webhook document defines no notification " + code}
	}
	folded, err := foldMetadata(body)
	if err != nil {
		return []string{err.Error()}
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	_, errs := v.schemas.ValidateSchemaBytes(schema, folded)
	out := describe(errs)
	for i := range out {
		out[i] = code + ": " + out[i]
	}
	return out
}

// eventCode returns the event code of a notification body's first item.
func eventCode(body []byte) (string, error) {
	var n struct {
		NotificationItems []struct {
			Item struct {
				EventCode string `json:"eventCode"`
			} `json:"NotificationRequestItem"`
		} `json:"notificationItems"`
	}
	if err := json.Unmarshal(body, &n); err != nil {
		return "", errors.New("notification is not JSON: " + err.Error())
	}
	if len(n.NotificationItems) == 0 {
		return "", errors.New("notification without items")
	}
	return n.NotificationItems[0].Item.EventCode, nil
}

// listsHMAC are the events whose additionalData schema lists hmacSignature;
// filled by Load.
var listsHMAC = map[string]bool{}

// foldMetadata rewrites every item's additionalData "metadata.<key>"
// entries into a "metadata" object (see Notification).
func foldMetadata(body []byte) ([]byte, error) {
	var n map[string]any
	if err := json.Unmarshal(body, &n); err != nil {
		return nil, err
	}
	items, _ := n["notificationItems"].([]any)
	for _, w := range items {
		wrap, _ := w.(map[string]any)
		item, _ := wrap["NotificationRequestItem"].(map[string]any)
		ad, _ := item["additionalData"].(map[string]any)
		if _, signed := ad["hmacSignature"]; signed && !listsHMAC[item["eventCode"].(string)] {
			delete(ad, "hmacSignature")
		}
		meta := map[string]any{}
		for k, val := range ad {
			if name, ok := strings.CutPrefix(k, "metadata."); ok {
				meta[name] = val
				delete(ad, k)
			}
		}
		if len(meta) > 0 {
			ad["metadata"] = meta
		}
	}
	return json.Marshal(n)
}

func describe(errs []*verrors.ValidationError) []string {
	var out []string
	for _, e := range errs {
		msg := e.Message
		if e.Reason != "" && e.Reason != e.Message {
			msg += ": " + e.Reason
		}
		for _, se := range e.SchemaValidationErrors {
			loc := se.FieldPath
			if loc == "" {
				loc = se.KeywordLocation
			}
			msg += " [" + loc + ": " + se.Reason + "]"
		}
		out = append(out, msg)
	}
	sort.Strings(out)
	return out
}

func readAndRestore(body *io.ReadCloser) ([]byte, error) {
	if *body == nil || *body == http.NoBody {
		return nil, nil
	}
	b, err := io.ReadAll(*body)
	_ = (*body).Close()
	*body = io.NopCloser(bytes.NewReader(b))
	return b, err
}

// Violation is one message that does not conform to the documents.
type Violation struct {
	Kind    string // "request", "response" or "notification"
	Subject string // "POST /v71/payments" or the event code
	Errors  []string
}

func (v Violation) String() string {
	return v.Kind + " " + v.Subject + ": " + strings.Join(v.Errors, "; ")
}

// Recorder collects violations and counts what was checked. It is safe
// for concurrent use.
type Recorder struct {
	mu         sync.Mutex
	violations []Violation
	checked    map[string]int
}

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder { return &Recorder{checked: map[string]int{}} }

func (r *Recorder) record(kind, subject string, errs []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.checked[kind+" "+subject]++
	if len(errs) > 0 {
		r.violations = append(r.violations, Violation{Kind: kind, Subject: subject, Errors: errs})
	}
}

// Violations returns the violations recorded so far.
func (r *Recorder) Violations() []Violation {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Violation(nil), r.violations...)
}

// Checked returns how many messages of each kind and subject were
// validated, e.g. "response POST /v71/payments" → 12.
func (r *Recorder) Checked() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.checked)
}

// CheckNotification validates a notification body and records the result.
func (r *Recorder) CheckNotification(v *Validator, body []byte) {
	code, err := eventCode(body)
	if err != nil {
		code = "?"
	}
	r.record("notification", code, v.Notification(body))
}

// Transport wraps next (nil: http.DefaultTransport) so that every request
// sent through it and every answer received are validated and recorded in
// rec. Answers that are not 2xx are checked too: the document defines the
// platform's error bodies.
func (v *Validator) Transport(next http.RoundTripper, rec *Recorder) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		subject := r.Method + " " + r.URL.Path
		rec.record("request", subject, v.Request(r))
		resp, err := next.RoundTrip(r)
		if err != nil {
			return nil, err
		}
		rec.record("response", subject, v.Response(r, resp))
		return resp, nil
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Handler wraps next (the simulator) so that every API request it
// receives and every answer it gives are validated and recorded in rec.
// Requests outside the document's paths (the simulator's /_sim test hooks)
// are passed through unchecked.
func (v *Validator) Handler(next http.Handler, rec *Recorder) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/_sim/") {
			next.ServeHTTP(w, r)
			return
		}
		subject := r.Method + " " + r.URL.Path
		rec.record("request", subject, v.Request(r))
		rw := httptest.NewRecorder()
		next.ServeHTTP(rw, r)
		resp := rw.Result()
		rec.record("response", subject, v.Response(r, resp))
		maps.Copy(w.Header(), rw.Header())
		w.WriteHeader(rw.Code)
		_, _ = w.Write(rw.Body.Bytes())
	})
}
