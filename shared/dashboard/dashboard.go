// Package dashboard is the local server's dashboard (`make run`, test
// environment, loopback only): server-rendered pages of a merchant's
// payments with their ledger and timeline, events, webhook deliveries
// (retry now), the latest requests, and the simulator's controls (send a
// notification for a payment, move the simulator's clock). Everything is
// read through the merchant API (package adminapi); every action is a
// POST carrying the page's CSRF token. No script, no build step, no CDN.
package dashboard

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/yp/paysvc/shared/adminapi"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/webhooks"
)

// Prefix is where the dashboard is served.
const Prefix = "/_dashboard/"

//go:embed dashboard.html
var pagesHTML string

var pages = template.Must(template.New("dashboard").Funcs(template.FuncMap{
	"amount": amountText, "badge": badgeClass, "when": when, "whenPtr": whenPtr, "short": short, "ms": func(d time.Duration) string {
		return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 1, 64)
	},
	"trigger": func(p Page, psp, back string) triggerForm { return triggerForm{Page: p, PSP: psp, Back: back} },
}).Parse(pagesHTML))

// triggerForm is the data of the "send a notification" form.
type triggerForm struct {
	Page
	PSP, Back string
}

// Info is what the dashboard says about the server.
type Info struct {
	BaseURL     string
	Environment string
	DataDir     string
	// SimulatorMode says how the simulator behaves ("" without one).
	SimulatorMode string
}

// Dashboard serves the pages under Prefix.
type Dashboard struct {
	local    *adminapi.Local
	requests *RequestLog
	info     Info
	csrf     string
	mux      *http.ServeMux
}

// New returns the dashboard of a local server. Its CSRF token is random
// per process.
func New(local *adminapi.Local, requests *RequestLog, info Info) *Dashboard {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand, Go 1.24+)
	d := &Dashboard{local: local, requests: requests, info: info, csrf: hex.EncodeToString(b), mux: http.NewServeMux()}
	d.mux.HandleFunc("GET "+Prefix+"{$}", d.overview)
	d.mux.HandleFunc("GET "+Prefix+"payments/{psp}", d.payment)
	d.mux.HandleFunc("GET "+Prefix+"deliveries/{id}", d.delivery)
	d.mux.HandleFunc("POST "+Prefix+"deliveries/{id}/retry", d.action(d.retry))
	d.mux.HandleFunc("POST "+Prefix+"trigger", d.action(d.trigger))
	d.mux.HandleFunc("POST "+Prefix+"payments/{psp}/{op}", d.action(d.modify))
	d.mux.HandleFunc("POST "+Prefix+"simulator/clock", d.action(d.moveClock))
	d.mux.HandleFunc("POST "+Prefix+"simulator/expire-offers", d.action(d.expireOffers))
	d.mux.HandleFunc(Prefix, func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no such dashboard page", http.StatusNotFound)
	})
	return d
}

func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("Referrer-Policy", "no-referrer")
	if r.URL.Path == strings.TrimSuffix(Prefix, "/") {
		http.Redirect(w, r, Prefix, http.StatusFound)
		return
	}
	d.mux.ServeHTTP(w, r)
}

// Page is what every page has.
type Page struct {
	Title      string
	CSRF       string
	Info       Info
	Merchants  []tenant.Merchant
	Merchant   string
	Msg, Err   string
	EventCodes []string
	Problems   []string // parts that could not be read
}

// common fills the page for r: the merchants and the selected one.
func (d *Dashboard) common(r *http.Request, title string) Page {
	p := Page{Title: title, CSRF: d.csrf, Info: d.info, Msg: r.URL.Query().Get("msg"), Err: r.URL.Query().Get("err"), EventCodes: adminapi.EventCodes}
	ms, err := d.local.Merchants(r.Context())
	if err != nil {
		p.Problems = append(p.Problems, "merchants: "+err.Error())
	}
	p.Merchants = ms
	p.Merchant = r.URL.Query().Get("merchant")
	if p.Merchant == "" && len(ms) > 0 {
		p.Merchant = ms[0].ID
	}
	return p
}

func (d *Dashboard) render(w http.ResponseWriter, name string, data any) {
	var b bytes.Buffer
	if err := pages.ExecuteTemplate(&b, name, data); err != nil {
		http.Error(w, "dashboard: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = b.WriteTo(w)
}

// simInfo is the simulator's part of the overview.
type simInfo struct {
	Now    time.Time
	Offset time.Duration
}

func (d *Dashboard) overview(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	data := struct {
		Page
		Filter     paymentFilter
		States     []string
		Payments   []adminapi.PaymentRow
		Events     []adminapi.Event
		Deliveries []adminapi.Delivery
		Requests   []Request
		Sim        *simInfo
	}{Page: d.common(r, "paysvc local dashboard"), Requests: d.requests.Recent()}
	ctx, m := r.Context(), data.Merchant
	var err error
	if m != "" {
		data.Filter = paymentFilter{Text: strings.TrimSpace(q.Get("q")), State: q.Get("state"), Date: strings.TrimSpace(q.Get("date"))}
		var rows []adminapi.PaymentRow
		if rows, err = d.local.RecentPayments(ctx, m, 100); err != nil {
			data.Problems = append(data.Problems, "payments: "+err.Error())
		}
		data.States, data.Payments = states(rows), data.Filter.apply(rows, 20)
		if data.Events, err = d.local.Events(ctx, m, "", 20); err != nil {
			data.Problems = append(data.Problems, "events: "+err.Error())
		}
		if data.Deliveries, err = d.local.Deliveries(ctx, m, 20); err != nil {
			data.Problems = append(data.Problems, "deliveries: "+err.Error())
		}
	}
	data.Requests = data.Requests[:min(len(data.Requests), 50)]
	if s := d.local.Sim; s != nil {
		data.Sim = &simInfo{Now: s.Now(), Offset: s.ClockOffset()}
	}
	d.render(w, "overview", data)
}

func (d *Dashboard) payment(w http.ResponseWriter, r *http.Request) {
	psp := r.PathValue("psp")
	data := struct {
		Page
		PSP          string
		SiteID       string
		State        string
		Actions      []modifyForm
		Found        bool
		Fields       []field
		Ledger       []field
		Tables       []table
		TimelineNext string
		Events       []adminapi.Event
		Raw          string
	}{Page: d.common(r, "Payment "+psp), PSP: psp}
	p, err := d.local.Payment(r.Context(), data.Merchant, psp)
	switch {
	case err == nil:
		data.Found, data.SiteID, data.Raw = true, p.SiteID, prettyJSON(p.Raw)
		data.Fields, data.Ledger, data.Tables = paymentView(p.View)
		data.State, _ = p.View["state"].(string)
		data.Actions = modifyForms(p.View)
		data.TimelineNext, _ = p.View["timelineNext"].(string)
	case adminapi.IsNotFound(err):
		data.Problems = append(data.Problems, "the lookup endpoint does not know "+psp+" for "+data.Merchant+" (a payment of another merchant, or a notification for a payment the service never made)")
	default:
		data.Problems = append(data.Problems, "payment: "+err.Error())
	}
	if data.Events, err = d.local.Events(r.Context(), data.Merchant, psp, 100); err != nil {
		data.Problems = append(data.Problems, "events: "+err.Error())
	}
	d.render(w, "payment", data)
}

func (d *Dashboard) delivery(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	data := struct {
		Page
		ID     string
		Found  bool
		Detail adminapi.DeliveryDetail
		Body   string
		// MaxHistory and MaxBody are the bounds of the attempts kept.
		MaxHistory, MaxBody int
	}{Page: d.common(r, "Delivery "+id), ID: id, MaxHistory: webhooks.MaxHistory, MaxBody: webhooks.MaxBodyPrefix}
	det, err := d.local.DeliveryDetail(r.Context(), data.Merchant, id)
	if err != nil {
		data.Problems = append(data.Problems, "delivery: "+err.Error())
	} else {
		data.Found, data.Detail, data.Body = true, det, prettyJSON(det.Delivery.Payload)
	}
	d.render(w, "delivery", data)
}

// maxForm bounds an action's form.
const maxForm = 64 << 10

// action wraps a POST handler: it checks the CSRF token (and that the form
// is not sent from another site), runs do and returns to the page named by
// the form's "back" with do's message.
func (d *Dashboard) action(do func(ctx context.Context, r *http.Request, merchant string) (string, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, maxForm)
		if err := r.ParseForm(); err != nil {
			http.Error(w, "dashboard: "+err.Error(), http.StatusBadRequest)
			return
		}
		if subtle.ConstantTimeCompare([]byte(r.PostForm.Get("csrf")), []byte(d.csrf)) != 1 || r.Header.Get("Sec-Fetch-Site") == "cross-site" {
			http.Error(w, "dashboard: the form's CSRF token is missing or not this server's (reload the page)", http.StatusForbidden)
			return
		}
		merchant := r.PostForm.Get("merchant")
		msg, err := do(r.Context(), r, merchant)
		back := r.PostForm.Get("back")
		if !strings.HasPrefix(back, Prefix) || strings.HasPrefix(back, "//") {
			back = Prefix
		}
		u, _ := url.Parse(back)
		q := u.Query()
		q.Set("merchant", merchant)
		q.Del("msg")
		q.Del("err")
		if err != nil {
			q.Set("err", err.Error())
		} else {
			q.Set("msg", msg)
		}
		u.RawQuery = q.Encode()
		http.Redirect(w, r, u.String(), http.StatusSeeOther)
	}
}

func (d *Dashboard) retry(ctx context.Context, r *http.Request, merchant string) (string, error) {
	res, err := d.local.RetryNow(ctx, merchant, r.PathValue("id"))
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("delivery %s (%s): attempt %d now, %s", res.DeliveryID, res.Status, res.NextAttempt, res.How), nil
}

func (d *Dashboard) trigger(ctx context.Context, r *http.Request, merchant string) (string, error) {
	f := r.PostForm
	req := adminapi.TriggerRequest{MerchantID: merchant, EventCode: f.Get("eventCode"), PSPReference: strings.TrimSpace(f.Get("psp"))}
	if other := strings.TrimSpace(f.Get("otherEventCode")); other != "" {
		req.EventCode = other
	}
	if f.Get("success") == "false" {
		req.Set = append(req.Set, "success=false")
	}
	for _, s := range [][2]string{{"amount", "amount.value"}, {"reason", "reason"}} { // form field, item field
		if v := strings.TrimSpace(f.Get(s[0])); v != "" {
			req.Set = append(req.Set, s[1]+"="+v)
		}
	}
	res, err := d.local.Trigger(ctx, req)
	if err != nil {
		return "", err
	}
	msg := fmt.Sprintf("sent %s (success %s) for payment %s: %s", res.Item.EventCode, res.Item.Success, res.PaymentPSPReference, res.Answer)
	if res.Operation != "" {
		msg += "; operation: " + res.Operation
	}
	if len(res.Events) == 0 && res.DuplicateOf != "" {
		msg += "; no new event: the service had this notification already (event " + res.DuplicateOf + ")"
	} else if len(res.Events) == 0 {
		msg += "; no event recorded for " + res.MerchantID + " (not routable to it: see paysvc-admin notification list --unroutable)"
	} else if len(res.Targets) == 0 {
		msg += "; its webhook went nowhere: no subscription for it and no listen runs"
	}
	for _, t := range res.Targets {
		msg += "; " + t.String()
	}
	return msg, nil
}

func (d *Dashboard) moveClock(_ context.Context, r *http.Request, _ string) (string, error) {
	if d.local.Sim == nil {
		return "", errors.New("the upstream is not simulated")
	}
	by, err := time.ParseDuration(strings.TrimSpace(r.PostForm.Get("by")))
	if err != nil {
		return "", fmt.Errorf("move the clock by: %w (e.g. 13h, 90m)", err)
	}
	now, err := d.local.Sim.AdvanceClock(by)
	if err != nil {
		return "", err
	}
	return "the simulator's clock is now " + when(now) + " UTC", nil
}

func (d *Dashboard) expireOffers(context.Context, *http.Request, string) (string, error) {
	if d.local.Sim == nil {
		return "", errors.New("the upstream is not simulated")
	}
	closed := d.local.Sim.ExpireOffers()
	if len(closed) == 0 {
		return "no open offer is older than 12 hours on the simulator's clock", nil
	}
	return fmt.Sprintf("closed %d offers (OFFER_CLOSED sent): %s", len(closed), strings.Join(closed, ", ")), nil
}
