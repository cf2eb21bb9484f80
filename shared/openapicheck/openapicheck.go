// Package openapicheck holds the service to its published contract,
// docs/openapi.yaml: it lints the document and validates real requests and
// answers against it with libopenapi-validator. Tests use it through
// Handler (in-process) and Transport (over the network), which fail the
// test on any violation.
package openapicheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"

	"github.com/yp/paysvc/docs"
)

// Checker validates exchanges against one OpenAPI document.
type Checker struct {
	mu    sync.Mutex // the validator's caches are not documented as concurrency safe
	v     validator.Validator
	model *v3.Document
}

var (
	sharedOnce sync.Once
	shared     *Checker
	sharedErr  error
)

// Repository returns the checker of docs/openapi.yaml (built once).
func Repository() (*Checker, error) {
	sharedOnce.Do(func() { shared, sharedErr = New(docs.OpenAPI) })
	return shared, sharedErr
}

// New builds a checker of spec. It fails when the document does not build
// as OpenAPI 3.1 or does not pass the validator's own document checks.
func New(spec []byte) (*Checker, error) {
	doc, err := libopenapi.NewDocument(spec)
	if err != nil {
		return nil, fmt.Errorf("openapicheck: parse: %w", err)
	}
	if v := doc.GetVersion(); !strings.HasPrefix(v, "3.1") {
		return nil, fmt.Errorf("openapicheck: version %q, want 3.1.x", v)
	}
	model, err := doc.BuildV3Model()
	if err != nil {
		return nil, fmt.Errorf("openapicheck: build model: %w", err)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		return nil, fmt.Errorf("openapicheck: validator: %w", errors.Join(errs...))
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		msgs := make([]string, 0, len(verrs))
		for _, e := range verrs {
			msgs = append(msgs, e.Error())
		}
		return nil, fmt.Errorf("openapicheck: invalid document: %s", strings.Join(msgs, "; "))
	}
	c := &Checker{v: v, model: &model.Model}
	if err := c.lint(); err != nil {
		return nil, err
	}
	return c, nil
}

// lint checks what the schema of OpenAPI does not: every operation has an
// operationId and a 2xx answer, and every answer documents X-Request-Id.
func (c *Checker) lint() error {
	var problems []string
	for path, item := range c.model.Paths.PathItems.FromOldest() {
		for method, op := range item.GetOperations().FromOldest() {
			where := strings.ToUpper(method) + " " + path
			if op.OperationId == "" {
				problems = append(problems, where+": no operationId")
			}
			has2xx := false
			for code, resp := range op.Responses.Codes.FromOldest() {
				if strings.HasPrefix(code, "2") {
					has2xx = true
				}
				if resp.Headers == nil || resp.Headers.GetOrZero("X-Request-Id") == nil {
					problems = append(problems, where+" "+code+": X-Request-Id not documented")
				}
			}
			if !has2xx {
				problems = append(problems, where+": no 2xx answer")
			}
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return fmt.Errorf("openapicheck: lint: %s", strings.Join(problems, "; "))
	}
	return nil
}

// Operations returns "METHOD /path" of every operation of the document.
func (c *Checker) Operations() []string {
	var out []string
	for path, item := range c.model.Paths.PathItems.FromOldest() {
		for method := range item.GetOperations().FromOldest() {
			out = append(out, strings.ToUpper(method)+" "+path)
		}
	}
	sort.Strings(out)
	return out
}

// Bodies returns, for every operation ("METHOD /path") that takes a request
// body, whether the document requires it (OpenAPI's default: not required).
func (c *Checker) Bodies() map[string]bool {
	out := map[string]bool{}
	for path, item := range c.model.Paths.PathItems.FromOldest() {
		for method, op := range item.GetOperations().FromOldest() {
			if rb := op.RequestBody; rb != nil {
				out[strings.ToUpper(method)+" "+path] = rb.Required != nil && *rb.Required
			}
		}
	}
	return out
}

// ErrorCodes returns the errorCode values the document declares.
func (c *Checker) ErrorCodes() []string {
	s := c.model.Components.Schemas.GetOrZero("Error")
	if s == nil {
		return nil
	}
	p := s.Schema().Properties.GetOrZero("errorCode")
	if p == nil {
		return nil
	}
	var out []string
	for _, n := range p.Schema().Enum {
		out = append(out, n.Value)
	}
	sort.Strings(out)
	return out
}

// Exchange is one request and the answer it got.
type Exchange struct {
	Method, URL string // URL: absolute, or a path with query
	Header      http.Header
	Body        []byte
	Status      int
	RespHeader  http.Header
	RespBody    []byte
}

// Check returns every violation of the document by x (none: nil).
//
// The answer is always checked. The request is checked when the service
// accepted it (2xx): a request the document calls invalid must not succeed.
// A request the service refused is not checked (tests send invalid ones on
// purpose); its error answer is. Unknown paths and methods are answered by
// the service's catch-all 404 yp_9004 and 405 yp_9005, which are checked
// against the Error schema's shape.
func (c *Checker) Check(x Exchange) []string {
	req := httptest.NewRequest(x.Method, x.URL, bytes.NewReader(x.Body))
	req.Header = x.Header.Clone()
	if req.Header == nil {
		req.Header = http.Header{}
	}
	resp := &http.Response{
		StatusCode: x.Status, Header: x.RespHeader.Clone(),
		Body: io.NopCloser(bytes.NewReader(x.RespBody)), Request: req,
	}
	if resp.Header == nil {
		resp.Header = http.Header{}
	}
	var out []string
	if resp.Header.Get("X-Request-Id") == "" {
		out = append(out, "answer without X-Request-Id")
	}
	if !cleanPath(req.URL.Path) {
		// No path of the document has an empty, "." or ".." segment (the
		// validator would match "/v1/ecom//config" to "/v1/ecom/config"):
		// such a request must get the catch-all 404.
		if x.Status != http.StatusNotFound || !catchAll(x.Status, x.RespBody) {
			out = append(out, fmt.Sprintf("answer: %d %s for an unclean path, want the catch-all 404 yp_9004", x.Status, clip(x.RespBody)))
		}
		return out
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if x.Status >= 200 && x.Status < 300 {
		if ok, errs := c.v.ValidateHttpRequestSync(req); !ok {
			for _, e := range errs {
				out = append(out, "request: "+e.Error())
			}
			return out
		}
		req.Body = io.NopCloser(bytes.NewReader(x.Body))
	}
	ok, errs := c.v.ValidateHttpResponse(req, resp)
	if ok {
		return out
	}
	for _, e := range errs {
		if (e.IsPathMissingError() || e.IsOperationMissingError()) && catchAll(x.Status, x.RespBody) {
			continue
		}
		out = append(out, "answer: "+e.Error())
	}
	return out
}

// cleanPath reports whether p has no empty, "." or ".." segment (a trailing
// slash aside).
func cleanPath(p string) bool {
	if strings.Contains(p, "//") {
		return false
	}
	for seg := range strings.SplitSeq(p, "/") {
		if seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

// catchAll reports whether an answer is the service's JSON 404/405 for a
// path or method the API does not have.
func catchAll(status int, body []byte) bool {
	var e struct {
		ErrorCode string `json:"errorCode"`
		Message   string `json:"message"`
	}
	if json.Unmarshal(body, &e) != nil || e.Message == "" {
		return false
	}
	return (status == http.StatusNotFound && e.ErrorCode == "yp_9004") ||
		(status == http.StatusMethodNotAllowed && e.ErrorCode == "yp_9005")
}

// TB is the part of testing.TB the hooks use.
type TB interface {
	Helper()
	Errorf(format string, args ...any)
}

func (c *Checker) report(t TB, x Exchange) {
	if v := c.Check(x); len(v) > 0 {
		t.Helper()
		t.Errorf("openapi contract: %s %s → %d violates docs/openapi.yaml:\n  %s\n  request body: %s\n  answer body: %s",
			x.Method, x.URL, x.Status, strings.Join(v, "\n  "), clip(x.Body), clip(x.RespBody))
	}
}

func clip(b []byte) string {
	if len(b) > 600 {
		return string(b[:600]) + "…"
	}
	return string(b)
}

// Handler wraps an in-process handler: every request and answer through it
// is checked, and a violation fails t.
func (c *Checker) Handler(t TB, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		hdr := r.Header.Clone()
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
		c.report(t, Exchange{
			Method: r.Method, URL: r.URL.RequestURI(), Header: hdr, Body: body,
			Status: rec.Code, RespHeader: rec.Header(), RespBody: rec.Body.Bytes(),
		})
	})
}

// Transport wraps an HTTP client's transport (nil: http.DefaultTransport):
// every exchange it carries is checked, and a violation fails t.
func (c *Checker) Transport(t TB, next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		var body []byte
		if r.Body != nil {
			body, _ = io.ReadAll(r.Body)
			_ = r.Body.Close()
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		resp, err := next.RoundTrip(r)
		if err != nil {
			return nil, err
		}
		rb, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(rb))
		if err != nil {
			return resp, nil // the caller sees the short body; nothing to check
		}
		c.report(t, Exchange{
			Method: r.Method, URL: r.URL.RequestURI(), Header: r.Header, Body: body,
			Status: resp.StatusCode, RespHeader: resp.Header, RespBody: rb,
		})
		return resp, nil
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Documents reports whether the document tells that status can carry
// errorCode code: an answer with that status describes the code (as
// "`code`"), or, for the catch-all 404/405, the API description does
// ("404 `code`").
func (c *Checker) Documents(status int, code string) bool {
	mark := "`" + code + "`"
	if strings.Contains(c.model.Info.Description, fmt.Sprintf("%d %s", status, mark)) {
		return true
	}
	want := fmt.Sprint(status)
	for _, item := range c.model.Paths.PathItems.FromOldest() {
		for _, op := range item.GetOperations().FromOldest() {
			if r := op.Responses.Codes.GetOrZero(want); r != nil && strings.Contains(r.Description, mark) {
				return true
			}
		}
	}
	return false
}

// Diff compares the operations of the document with those of the code
// ("METHOD /path" each): what the document lacks and what the code lacks.
func Diff(document, code []string) (notInDocument, notInCode []string) {
	for _, op := range code {
		if !slices.Contains(document, op) {
			notInDocument = append(notInDocument, op)
		}
	}
	for _, op := range document {
		if !slices.Contains(code, op) {
			notInCode = append(notInCode, op)
		}
	}
	return notInDocument, notInCode
}

// CheckWebhook returns every violation (none: nil) of a webhook the
// service sent, with its headers and body, by the document's webhook name
// (its `webhooks` section): each header parameter present when required and
// valid, the body valid against the request body's schema.
func (c *Checker) CheckWebhook(name string, header http.Header, body []byte) []string {
	item := c.model.Webhooks.GetOrZero(name)
	if item == nil || item.Post == nil {
		return []string{"the document has no webhook " + name}
	}
	op := item.Post
	c.mu.Lock()
	defer c.mu.Unlock()
	sv := schema_validation.NewSchemaValidator()
	var out []string
	for _, p := range op.Parameters {
		if p.In != "header" {
			continue
		}
		v := header.Get(p.Name)
		if v == "" {
			if p.Required != nil && *p.Required {
				out = append(out, "header "+p.Name+" missing")
			}
			continue
		}
		if p.Schema == nil {
			continue
		}
		if ok, errs := sv.ValidateSchemaObject(p.Schema.Schema(), v); !ok {
			for _, e := range errs {
				out = append(out, "header "+p.Name+": "+validationText(e.Reason, e.SchemaValidationErrors))
			}
		}
	}
	if op.RequestBody == nil {
		return out
	}
	mt := op.RequestBody.Content.GetOrZero("application/json")
	if mt == nil || mt.Schema == nil {
		return append(out, "webhook "+name+" documents no application/json body")
	}
	if ok, errs := sv.ValidateSchemaBytes(mt.Schema.Schema(), body); !ok {
		for _, e := range errs {
			out = append(out, "body: "+validationText(e.Reason, e.SchemaValidationErrors))
		}
	}
	return out
}

// validationText joins a schema validation error's reason and details.
func validationText[T interface{ Error() string }](reason string, details []T) string {
	parts := []string{reason}
	for _, d := range details {
		parts = append(parts, d.Error())
	}
	return strings.Join(parts, "; ")
}
