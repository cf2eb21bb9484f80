package records

import (
	"maps"
	"time"

	"github.com/yp/paysvc/shared/idempotency"
)

// Idempotency is a stored idempotency record (the embedded store's format;
// DynamoDB keeps the fields as attributes and only the response as JSON).
type Idempotency struct {
	Format      Format    `json:"format"`
	Scope       string    `json:"scope"`
	Key         string    `json:"key"`
	Fingerprint string    `json:"fingerprint"`
	Status      string    `json:"status"`
	LeaseToken  string    `json:"leaseToken,omitempty"`
	LeaseUntil  time.Time `json:"leaseUntil"`
	ExpiresAt   time.Time `json:"expiresAt"`
	Response    *Response `json:"response,omitempty"`
}

// Response is a stored result, replayed byte for byte.
type Response struct {
	Status int               `json:"status"`
	Header map[string]string `json:"header,omitempty"`
	Body   []byte            `json:"body"`
}

// FromIdempotency converts an idempotency record to its stored form.
func FromIdempotency(r idempotency.Record) Idempotency {
	return Idempotency{
		Scope: r.Scope, Key: r.Key, Fingerprint: r.Fingerprint, Status: string(r.Status), LeaseToken: r.LeaseToken,
		LeaseUntil: r.LeaseUntil.UTC(), ExpiresAt: r.ExpiresAt.UTC(), Response: FromResponse(r.Response),
	}
}

// ToIdempotency converts a stored idempotency record to the domain's.
func (r Idempotency) ToIdempotency() idempotency.Record {
	return idempotency.Record{
		Scope: r.Scope, Key: r.Key, Fingerprint: r.Fingerprint, Status: idempotency.Status(r.Status), LeaseToken: r.LeaseToken,
		LeaseUntil: r.LeaseUntil, ExpiresAt: r.ExpiresAt, Response: r.Response.ToResponse(),
	}
}

// FromResponse converts a stored result to its stored form (nil stays nil).
func FromResponse(r *idempotency.Response) *Response {
	if r == nil {
		return nil
	}
	return &Response{Status: r.Status, Header: maps.Clone(r.Header), Body: r.Body}
}

// ToResponse converts a stored result to the domain's (nil stays nil).
func (r *Response) ToResponse() *idempotency.Response {
	if r == nil {
		return nil
	}
	return &idempotency.Response{Status: r.Status, Header: r.Header, Body: r.Body}
}
