// Package adminapi is the local server's operator side (`make run`, test
// environment, loopback only): the admin API paysvc-admin goes through
// while the server holds the embedded store (a bearer token kept in the
// data directory), the operations behind it and behind the dashboard
// (send a signed notification, retry a delivery now — a pending one too —,
// stream a merchant's webhooks to a listener), and the Host check of the
// local routes.
//
// Payments, events and deliveries are read through the merchant API itself
// (in process, with Keys), so these views show exactly what a merchant's
// integration sees.
package adminapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"time"

	"github.com/yp/paysvc/shared/client"
	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/config"
	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/queue/localqueue"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/upstream/simulator"
	"github.com/yp/paysvc/shared/webhooks"
)

// Local is the running local server as its operator tools see it.
type Local struct {
	// Handler serves the merchant API and the notifications endpoint:
	// the local server's handler without its local routes.
	Handler http.Handler
	// Actions serves what Trigger and Modify send, as Handler does, with
	// the dashboard's request log recording them; nil: Handler.
	Actions       http.Handler
	Keys          *Keys
	Tenants       tenant.Store
	DeliveryStore webhooks.DeliveryStore
	// Queue and Jobs are the local delivery queue and its jobs; nil when
	// the deliveries go through SQS.
	Queue *localqueue.Queue
	Jobs  localqueue.JobStore
	// Secrets sign notifications (HMACKey) and authenticate them at the
	// notifications endpoint (basic auth, when set).
	Secrets config.Secrets
	Sim     *simulator.Simulator // nil when the upstream is not simulated
	Clock   clock.Clock
	Hub     *Hub
}

// actions is the handler Trigger and Modify send through.
func (l *Local) actions() http.Handler {
	if l.Actions != nil {
		return l.Actions
	}
	return l.Handler
}

// NewLocal returns l with its listener hub.
func NewLocal(l Local) *Local {
	l.Hub = newHub(&l)
	return &l
}

// APIError is an answer of the merchant API other than 2xx.
type APIError struct {
	Status  int
	Code    string
	Message string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message)
}

// IsNotFound reports whether err is the API's 404.
func IsNotFound(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Status == http.StatusNotFound || errors.Is(err, client.ErrNotFound)
}

// key returns merchantID's in-memory key; the merchant must exist, so no
// key is made for a name that is not one (a ?merchant= any page can send).
func (l *Local) key(ctx context.Context, merchantID string) (string, error) {
	if _, err := l.Merchant(ctx, merchantID); err != nil {
		return "", err
	}
	return l.Keys.For(merchantID)
}

// call makes one merchant API request as merchantID, in process through
// h (with an Idempotency-Key when idempotencyKey is not ""), and returns a
// 2xx answer's body; any other answer is an *APIError.
func (l *Local) call(ctx context.Context, h http.Handler, merchantID, method, path string, body []byte, idempotencyKey string) ([]byte, error) {
	key, err := l.key(ctx, merchantID)
	if err != nil {
		return nil, err
	}
	req := httptest.NewRequestWithContext(ctx, method, path, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if idempotencyKey != "" {
		req.Header.Set("Idempotency-Key", idempotencyKey)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code/100 != 2 {
		var e struct{ ErrorCode, Message string }
		_ = json.Unmarshal(rec.Body.Bytes(), &e)
		return nil, &APIError{Status: rec.Code, Code: e.ErrorCode, Message: e.Message}
	}
	return bytes.TrimSpace(rec.Body.Bytes()), nil
}

// Merchants lists the merchants.
func (l *Local) Merchants(ctx context.Context) ([]tenant.Merchant, error) {
	return l.Tenants.ListMerchants(ctx)
}

// Merchant returns merchant id, or an error naming it.
func (l *Local) Merchant(ctx context.Context, id string) (tenant.Merchant, error) {
	m, err := l.Tenants.GetMerchant(ctx, id)
	if err != nil {
		return m, fmt.Errorf("merchant %q: %w", id, err)
	}
	return m, nil
}

// ecommerceSites returns merchantID's sites reachable through /v1/ecom.
func (l *Local) ecommerceSites(ctx context.Context, merchantID string) ([]tenant.Site, error) {
	sites, err := l.Tenants.ListSites(ctx, merchantID)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(sites, func(s tenant.Site) bool { return s.Type != tenant.SiteEcommerce && s.Type != "" }), nil
}

// Payment is a payment as the lookup endpoint answers it, decoded loosely
// (View): the answer grows, and the dashboard shows what is there.
type Payment struct {
	SiteID string
	View   map[string]any
	Raw    json.RawMessage
}

// Payment looks psp up on the merchant's sites.
func (l *Local) Payment(ctx context.Context, merchantID, psp string) (Payment, error) {
	sites, err := l.ecommerceSites(ctx, merchantID)
	if err != nil {
		return Payment{}, err
	}
	// The site the simulator was told the payment belongs to first.
	if l.Sim != nil {
		sp, _ := l.Sim.Payment(psp)
		if i := slices.IndexFunc(sites, func(s tenant.Site) bool { return s.ID == sp.Metadata["siteId"] }); i > 0 {
			sites = append([]tenant.Site{sites[i]}, slices.Delete(sites, i, i+1)...)
		}
	}
	for _, s := range sites {
		raw, err := l.call(ctx, l.Handler, merchantID, http.MethodGet, "/v1/ecom/"+url.PathEscape(s.ID)+"/payments/"+url.PathEscape(psp), nil, "")
		if IsNotFound(err) {
			continue
		}
		if err != nil {
			return Payment{}, err
		}
		p := Payment{SiteID: s.ID, Raw: raw}
		if err := json.Unmarshal(raw, &p.View); err != nil {
			return Payment{}, err
		}
		return p, nil
	}
	return Payment{}, &APIError{Status: http.StatusNotFound, Code: "yp_3006", Message: "payment " + psp + " not found on any site of " + merchantID}
}

// PaymentRow is one payment of the list.
type PaymentRow struct {
	PSPReference string
	SiteID       string
	Reference    string
	Amount       money.Amount
	State        string
	CreatedAt    time.Time
	Recorded     bool // the service has a record (the lookup answers)
}

// RecentPayments lists merchantID's latest payments, newest first: those
// the simulator made for its upstream account and those its events name,
// each as the lookup endpoint shows it.
func (l *Local) RecentPayments(ctx context.Context, merchantID string, limit int) ([]PaymentRow, error) {
	m, err := l.Merchant(ctx, merchantID)
	if err != nil {
		return nil, err
	}
	var psps []string
	add := func(psp string) {
		if psp != "" && !slices.Contains(psps, psp) && len(psps) < limit {
			psps = append(psps, psp)
		}
	}
	fromSim := map[string]simulator.PaymentState{}
	if l.Sim != nil {
		all := l.Sim.Payments()
		for i := len(all) - 1; i >= 0; i-- {
			if p := all[i]; p.MerchantAccount == m.UpstreamAccount {
				fromSim[p.PSPReference] = p
				add(p.PSPReference)
			}
		}
	}
	events, err := l.Events(ctx, merchantID, "", 100)
	if err != nil {
		return nil, err
	}
	for _, e := range events {
		add(e.PaymentPSPReference)
	}
	rows := make([]PaymentRow, 0, len(psps))
	for _, psp := range psps {
		row := PaymentRow{PSPReference: psp}
		p, err := l.Payment(ctx, merchantID, psp)
		switch {
		case err == nil:
			row.Recorded, row.SiteID = true, p.SiteID
			row.Reference, _ = p.View["merchantReference"].(string)
			row.State, _ = p.View["state"].(string)
			row.Amount = amountOf(p.View["amount"])
			row.CreatedAt, _ = time.Parse(time.RFC3339Nano, fmt.Sprint(p.View["createdAt"]))
		case IsNotFound(err):
			if sp, ok := fromSim[psp]; ok {
				row.Reference, row.Amount, row.State, row.CreatedAt = sp.Reference, sp.Amount, sp.State+" (simulator)", sp.CreatedAt
			}
		default:
			return nil, err
		}
		rows = append(rows, row)
	}
	slices.SortStableFunc(rows, func(a, b PaymentRow) int { return b.CreatedAt.Compare(a.CreatedAt) })
	return rows, nil
}

// amountOf reads an amount of a decoded answer.
func amountOf(v any) money.Amount {
	m, _ := v.(map[string]any)
	val, _ := m["value"].(float64)
	cur, _ := m["currency"].(string)
	return money.Amount{Value: int64(val), Currency: cur}
}

// Event is one of the merchant's events, Delivery one of its webhook
// deliveries: as the Go client reads them.
type (
	Event    = client.Event
	Delivery = client.WebhookDelivery
)

// handlerTransport serves the Go client's requests with the local
// server's handler, in process.
type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, r)
	return rec.Result(), nil
}

// client returns the Go client of merchantID's API, in process.
func (l *Local) client(ctx context.Context, merchantID string) (*client.Client, error) {
	key, err := l.key(ctx, merchantID)
	if err != nil {
		return nil, err
	}
	return client.New("http://paysvc.local", key, client.WithRetries(0, 0, 0),
		client.WithHTTPClient(&http.Client{Transport: handlerTransport{l.Handler}})), nil
}

// Events returns merchantID's latest events (of payment psp when given),
// newest first.
func (l *Local) Events(ctx context.Context, merchantID, psp string, limit int) ([]Event, error) {
	c, err := l.client(ctx, merchantID)
	if err != nil {
		return nil, err
	}
	page, err := c.ListEvents(ctx, client.EventFilter{ListParams: client.ListParams{Limit: min(max(limit, 1), 100)}, PSPReference: psp})
	return page.Data, err
}

// Deliveries returns merchantID's latest webhook deliveries, newest first.
func (l *Local) Deliveries(ctx context.Context, merchantID string, limit int) ([]Delivery, error) {
	c, err := l.client(ctx, merchantID)
	if err != nil {
		return nil, err
	}
	page, err := c.ListWebhookDeliveries(ctx, client.DeliveryFilter{ListParams: client.ListParams{Limit: min(max(limit, 1), 100)}})
	return page.Data, err
}
