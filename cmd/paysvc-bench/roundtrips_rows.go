package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/queue"
	"github.com/yp/paysvc/shared/queue/sqsqueue"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/upstream"
	"github.com/yp/paysvc/shared/webhooks"
)

// rtPayPath is the payments route of the bench's site.
const rtPayPath = "/v1/ecom/" + benchSite + "/payments"

// rtRun is one run of item 2: the service on moto, the rows measured so
// far, and what later rows need of earlier ones.
type rtRun struct {
	t   *section
	cfg *config
	e   *rtEnv
	n   int // measured requests per row
	res *roundTripResult
	// notifPSP are the payments whose AUTHORISATION the receiver accepted
	// (looked up later), jobs those notifications' delivery jobs.
	notifPSP []string
	jobs     []queue.Job
}

// runRoundTrips is item 2: every operation against DynamoDB on moto with
// the instrumented client, one request at a time.
func runRoundTrips(cfg *config) (*roundTripResult, error) {
	res := &roundTripResult{}
	err := runSection("roundtrips", cfg.progress, func(t *section) error {
		e, err := newRTEnv(t, cfg.recordStates)
		if err != nil {
			return err
		}
		r := &rtRun{t: t, cfg: cfg, e: e, n: cfg.RTRequests, res: res}
		for _, rows := range []func() error{
			r.firstRequest, r.paymentRows, r.modificationRows, r.detailsRows,
			r.notificationRows, r.failedAttemptRow, r.retryHopRow, r.merchantRows, r.storedCardRow, r.webhookRows,
		} {
			if err := rows(); err != nil {
				return err
			}
		}
		cfg.logf("roundtrips: notifications, deliveries and listings done")
		return nil
	})
	return res, err
}

// measure adds the row of an operation measured n times.
func (r *rtRun) measure(name string, n int, op func(i int) error) error {
	row, err := r.e.measureOp(name, n, op)
	if err != nil {
		return err
	}
	r.res.Rows = append(r.res.Rows, row)
	return nil
}

// rowOp is an operation measured as a row, its request i = 0..n-1.
type rowOp struct {
	name string
	op   func(i int) error
}

// measureAll adds the rows of ops, in order, each measured r.n times.
func (r *rtRun) measureAll(ops []rowOp) error {
	for _, m := range ops {
		if err := r.measure(m.name, r.n, m.op); err != nil {
			return err
		}
	}
	return nil
}

// api is request i of method path with body (a %s in it: the request's
// Idempotency-Key, idem(i), if idem is set), answered with status want.
func (r *rtRun) api(method, path, body string, idem func(i int) string, want int) func(i int) error {
	return func(i int) error {
		k := ""
		if idem != nil {
			k = idem(i)
		}
		b := body
		if strings.Contains(body, "%s") {
			b = fmt.Sprintf(body, k)
		}
		if code, out := r.e.do(method, path, b, k); code != want {
			return fmt.Errorf("%s %s: status %d: %s", method, path, code, out)
		}
		return nil
	}
}

// get is a GET of path(i) answered 200.
func (r *rtRun) get(path func(i int) string) func(i int) error {
	return func(i int) error { return r.api(http.MethodGet, path(i), "", nil, http.StatusOK)(i) }
}

// unique makes request i's reference or key, unique to the run.
func unique(prefix string) func(int) string {
	return func(i int) string { return fmt.Sprintf("rt-%s-%d-%d", prefix, time.Now().UnixNano(), i) }
}

// setup makes one value per measured request (a payment, a challenge's
// details) with mk.
func (r *rtRun) setup(mk func(i int) (string, error)) ([]string, error) {
	out := make([]string, r.n)
	for i := range out {
		var err error
		if out[i], err = mk(i); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// measureOn measures name: POST path(v) with body(v), v the request's
// value made in setup.
func (r *rtRun) measureOn(name string, vs []string, path, body func(v string) string, idem string) error {
	return r.measure(name, r.n, func(i int) error {
		return r.api(http.MethodPost, path(vs[i]), body(vs[i]), unique(idem), http.StatusOK)(i)
	})
}

// notified measures the receiver accepting the simulator's notification
// code of each payment of psps (its modification's).
func (r *rtRun) notified(code string, psps []string) error {
	r.e.flush(r.t)
	return r.measure("notification "+code+" (receiver)", r.n, func(i int) error { return r.e.notify(psps[i], code) })
}

// payFor makes request i's authorised payment, its reference from prefix.
func (r *rtRun) payFor(prefix string) func(i int) (string, error) {
	return func(i int) (string, error) { return r.e.pay(unique(prefix)(i)) }
}

// on is the path of operation op on a payment.
func on(op string) func(string) string {
	return func(psp string) string { return rtPayPath + "/" + psp + "/" + op }
}

// fixed is the same body for every payment.
func fixed(b string) func(string) string { return func(string) string { return b } }

// firstRequest measures a new instance's first request, which reads the
// key, site and merchant, and then warms the site cache (config resolves
// no site).
func (r *rtRun) firstRequest() error {
	if err := r.measure("first request of an instance (config, caches empty)", 1,
		r.api(http.MethodGet, "/v1/ecom/config", "", nil, http.StatusOK)); err != nil {
		return err
	}
	r.cfg.logf("roundtrips: first request done")
	if err := r.api(http.MethodPost, rtPayPath, payBodyFmt, unique("warm"), http.StatusOK)(0); err != nil {
		return err
	}
	r.e.rec.take()
	return nil
}

// paymentRows measures the requests of a checkout on warm caches, a
// replay, a payment on a cold tenant cache and one without an
// Idempotency-Key.
func (r *rtRun) paymentRows() error {
	replayKey := unique("replay")(0)
	replay := r.api(http.MethodPost, rtPayPath, payBodyFmt, func(int) string { return replayKey }, http.StatusOK)
	cold := r.api(http.MethodPost, rtPayPath, payBodyFmt, unique("cold"), http.StatusOK)
	if err := replay(0); err != nil { // the finished key the replay row sends again
		return err
	}
	return r.measureAll([]rowOp{
		{"GET config", r.api(http.MethodGet, "/v1/ecom/config", "", nil, http.StatusOK)},
		{"POST sessions (Idempotency-Key)", r.api(http.MethodPost, "/v1/ecom/"+benchSite+"/sessions", sessionBodyFmt, unique("ses"), http.StatusOK)},
		{"POST payments (Idempotency-Key)", r.api(http.MethodPost, rtPayPath, payBodyFmt, unique("pay"), http.StatusOK)},
		{"POST payment-methods", r.api(http.MethodPost, "/v1/ecom/"+benchSite+"/payment-methods",
			`{"countryCode":"NL","amount":{"currency":"EUR","value":4999}}`, nil, http.StatusOK)},
		{"POST payments, replay of a finished key", replay},
		// A new tenant cache before each request: the API key, site and
		// merchant are read.
		{"POST payments (Idempotency-Key), tenant cache cold", func(i int) error {
			r.e.deps.Auth = tenant.NewAuthenticator(r.e.st, tenant.EnvTest, clock.System{}, warmTTL)
			return cold(i)
		}},
		{"POST payments (no Idempotency-Key)", func(i int) error {
			code, out := r.e.do(http.MethodPost, rtPayPath, fmt.Sprintf(payBodyFmt, unique("nokey")(i)), "")
			if code != http.StatusOK {
				return fmt.Errorf("status %d: %s", code, out)
			}
			return nil
		}},
	})
}

// modificationRows measures each operation on a payment, each on payments
// made for it in setup (a refund's: the captured ones, their CAPTURE
// accepted), and then the notification of each operation.
func (r *rtRun) modificationRows() error {
	preAuth := func(i int) (string, error) { return r.e.payBody(preAuthBody(unique("upd-setup")(i)), "") }
	update := func(psp string) string { return fmt.Sprintf(amountUpdateBodyFmt, psp) }
	var psps []string
	for _, m := range []struct {
		name, op, idem string
		body           func(psp string) string
		setup          func(i int) (string, error) // nil: the payments of the row before
		code           string                      // the notification measured after
	}{
		{"POST captures (Idempotency-Key)", "captures", "cap", fixed(captureBody), r.payFor("cap-setup"), upstream.EventCapture},
		{"POST refunds (Idempotency-Key)", "refunds", "ref", fixed(refundBody), nil, upstream.EventRefund},
		{"POST reversals (Idempotency-Key)", "reversals", "rev", fixed("{}"), r.payFor("rev-setup"), upstream.EventCancellation},
		{"POST amount-updates (Idempotency-Key)", "amount-updates", "upd", update, preAuth, upstream.EventAuthorisationAdjustment},
	} {
		if m.setup != nil {
			var err error
			if psps, err = r.setup(m.setup); err != nil {
				return err
			}
		}
		if err := r.measureOn(m.name, psps, on(m.op), m.body, m.idem); err != nil {
			return err
		}
		if err := r.notified(m.code, psps); err != nil {
			return err
		}
	}
	return nil
}

// detailsRows measures a 3-D Secure payment: the platform answers its
// action without pspReference (the service writes the pending record and
// the action's alias), the details of its challenge name it (the payment
// written with the stored answer), details naming the payment's reference
// (its pending record read while the platform answers), and the
// AUTHORISATION that binds the pending record.
func (r *rtRun) detailsRows() error {
	challenges, refs := make([]string, r.n), make([]string, r.n)
	if err := r.measureAll([]rowOp{
		{"POST payments, an action answered (Idempotency-Key)", func(i int) error {
			refs[i] = unique("det-setup")(i)
			var err error
			challenges[i], err = r.e.challenge(refs[i], unique("act")(i))
			return err
		}},
		{"POST payments, an action answered (no Idempotency-Key)", func(i int) error {
			_, err := r.e.challenge(unique("act-nokey")(i), "")
			return err
		}},
	}); err != nil {
		return err
	}
	details := func(body string) string { return body }
	if err := r.measureOn("POST payments/details (Idempotency-Key)", challenges, fixed(rtPayPath+"/details"), details, "det"); err != nil {
		return err
	}
	named, err := r.setup(func(i int) (string, error) {
		ref := unique("named-setup")(i)
		body, err := r.e.challenge(ref, "")
		return strings.Replace(body, `{"details":`, `{"reference":"`+ref+`","details":`, 1), err
	})
	if err != nil {
		return err
	}
	if err := r.measureOn(namedDetailsRow, named, fixed(rtPayPath+"/details"), details, "det-named"); err != nil {
		return err
	}
	byRef := map[string]string{}
	for _, p := range r.e.sim.Sim.Payments() {
		byRef[p.Reference] = p.PSPReference
	}
	detailed := make([]string, r.n)
	for i, ref := range refs {
		if detailed[i] = byRef[ref]; detailed[i] == "" {
			return fmt.Errorf("the simulator has no payment %s", ref)
		}
	}
	r.e.flush(r.t)
	if err := r.measure(authorisationBindingRow, r.n, func(i int) error { return r.e.notify(detailed[i], upstream.EventAuthorisation) }); err != nil {
		return err
	}
	r.cfg.logf("roundtrips: API operations done")
	return nil
}

// notificationRows measures the simulator's signed AUTHORISATION of a
// payment started through the service, accepted by the receiver (event,
// payment record, delivery, SQS job), and the delivery attempt of the job
// it made.
func (r *rtRun) notificationRows() error {
	var err error
	if r.notifPSP, err = r.setup(r.payFor("notif-setup")); err != nil {
		return err
	}
	r.e.flush(r.t)
	r.jobs = make([]queue.Job, 0, r.n)
	return r.measureAll([]rowOp{
		{"notification AUTHORISATION (receiver)", func(i int) error {
			job, err := r.e.authorised(r.notifPSP[i])
			r.jobs = append(r.jobs, job)
			return err
		}},
		{"webhook delivery attempt (dispatcher)", func(i int) error {
			if out := r.e.disp.Process(context.Background(), r.jobs[i], 1); out.Kind != queue.Done {
				return fmt.Errorf("delivery %s: outcome %s", r.jobs[i].DeliveryID, out.Kind)
			}
			return nil
		}},
	})
}

// failedAttemptRow measures an attempt whose receiver fails: its failure
// recorded and its retry scheduled (the delivery of another AUTHORISATION
// each).
func (r *rtRun) failedAttemptRow() error {
	failJobs := make([]queue.Job, r.n)
	for i := range failJobs {
		psp, err := r.e.pay(unique("fail-setup")(i))
		if err != nil {
			return err
		}
		r.e.flush(r.t)
		if failJobs[i], err = r.e.authorised(psp); err != nil {
			return err
		}
	}
	r.e.hookFailing.Store(true)
	defer r.e.hookFailing.Store(false)
	return r.measure(failedAttemptRow, r.n, func(i int) error {
		if out := r.e.disp.Process(context.Background(), failJobs[i], 1); out.Kind != queue.Retry {
			return fmt.Errorf("delivery %s to a failing receiver: outcome %s, want retry", failJobs[i].DeliveryID, out.Kind)
		}
		return nil
	})
}

// retryHopRow measures a retry received before it is due (a wait longer
// than SQS's 15 minutes of delay): the dispatcher's SQS handler sends it
// on for the time left, without an attempt or a store access.
func (r *rtRun) retryHopRow() error {
	hop := sqsqueue.LambdaHandler(r.e.queue, r.e.disp.Process, r.e.disp.Clock, r.e.disp.Log)
	return r.measure(hopRow, r.n, func(i int) error {
		body, err := queue.Job{DeliveryID: r.jobs[i].DeliveryID, Attempt: 2, NotBefore: r.e.disp.Clock.Now().Add(time.Hour)}.Encode()
		if err != nil {
			return err
		}
		resp, err := hop(context.Background(), events.SQSEvent{Records: []events.SQSMessage{{
			MessageId: fmt.Sprintf("hop-%d", i), ReceiptHandle: fmt.Sprintf("rh-hop-%d", i), Body: body,
			Attributes: map[string]string{"ApproximateReceiveCount": "1"},
		}}})
		if err == nil && len(resp.BatchItemFailures) != 0 {
			err = fmt.Errorf("hop of %s reported failed", r.jobs[i].DeliveryID)
		}
		return err
	})
}

// merchantRows measures a page of each listing of the merchant (its
// deliveries and events made above; the merchant has its own shard
// counts, one each) and a payment looked up by the merchant (its
// AUTHORISATION accepted above): the head, and the first page of its
// timeline.
func (r *rtRun) merchantRows() error {
	return r.measureAll([]rowOp{
		{"GET webhook-deliveries (a page)", r.api(http.MethodGet, "/v1/ecom/webhook-deliveries", "", nil, http.StatusOK)},
		{"GET events (a page)", r.api(http.MethodGet, "/v1/ecom/events", "", nil, http.StatusOK)},
		{"GET payment", r.get(func(i int) string { return rtPayPath + "/" + r.notifPSP[i] })},
	})
}

// storedCardRow measures a shopper's stored card deleted by the merchant
// (each stored by a payment in setup).
func (r *rtRun) storedCardRow() error {
	shoppers := make([]string, r.n)
	tokens, err := r.setup(func(i int) (string, error) {
		shoppers[i] = unique("shopper")(i)
		body := strings.Replace(fmt.Sprintf(payBodyFmt, unique("store-setup")(i)), `"channel":"Web"`,
			`"channel":"Web","shopperReference":"`+shoppers[i]+`","storePaymentMethod":true,"recurringProcessingModel":"CardOnFile"`, 1)
		if _, err := r.e.payBody(body, ""); err != nil {
			return "", err
		}
		ids := r.e.sim.Sim.StoredPaymentMethods(benchAccount, shoppers[i])
		if len(ids) != 1 {
			return "", fmt.Errorf("setup stored card of %s: %v", shoppers[i], ids)
		}
		return ids[0], nil
	})
	if err != nil {
		return err
	}
	return r.measure("DELETE stored-payment-methods", r.n, func(i int) error {
		path := "/v1/ecom/" + benchSite + "/stored-payment-methods/" + tokens[i] + "?shopperReference=" + shoppers[i]
		return r.api(http.MethodDelete, path, "", nil, http.StatusOK)(i)
	})
}

// webhookRows measures the webhooks function: a merchant's retry of a
// delivery that ended failed (the deliveries above, failed in setup) and a
// test event to its subscription; and then a page of a payment's
// timeline.
func (r *rtRun) webhookRows() error {
	for _, j := range r.jobs {
		if _, err := webhooks.MutateDelivery(context.Background(), r.e.st, j.DeliveryID, func(d *webhooks.Delivery) error {
			d.Status, d.Enqueued = webhooks.StatusFailed, false
			return nil
		}); err != nil {
			return err
		}
	}
	return r.measureAll([]rowOp{
		{"POST webhook-deliveries retry", func(i int) error {
			return r.api(http.MethodPost, "/v1/ecom/webhook-deliveries/"+r.jobs[i].DeliveryID+"/retry", "", nil, http.StatusOK)(i)
		}},
		{"POST webhooks/test", r.api(http.MethodPost, "/v1/ecom/webhooks/test", "", nil, http.StatusOK)},
		{"GET payment timeline (a page)", r.get(func(i int) string { return rtPayPath + "/" + r.notifPSP[i] + "/timeline" })},
	})
}
