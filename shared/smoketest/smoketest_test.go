package smoketest_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/yp/paysvc/shared/smoketest"
)

// fakeDeployments is a deployment with fixed targets that records reports.
type fakeDeployments struct {
	targets   []smoketest.Target
	err       error
	reportErr error
	reports   []bool
}

func (f *fakeDeployments) Targets(context.Context, string) ([]smoketest.Target, error) {
	return f.targets, f.err
}

func (f *fakeDeployments) Report(_ context.Context, _ smoketest.Hook, ok bool) error {
	f.reports = append(f.reports, ok)
	return f.reportErr
}

// fakeInvoker answers every invocation with answer (a function of the
// event), recording function:qualifier of each.
type fakeInvoker struct {
	answer func(event []byte) smoketest.Answer
	calls  []string
}

func (f *fakeInvoker) Invoke(_ context.Context, fn, qualifier string, payload []byte) (smoketest.Answer, error) {
	f.calls = append(f.calls, fn+":"+qualifier)
	return f.answer(payload), nil
}

// proxy is an API Gateway proxy response payload.
func proxy(status int, body string) []byte {
	b, _ := json.Marshal(events.APIGatewayProxyResponse{StatusCode: status, Body: body})
	return b
}

// healthy answers every probe as a working deployment of kind k does.
func healthy(k smoketest.Kind, canary bool) func([]byte) smoketest.Answer {
	return func([]byte) smoketest.Answer {
		var p []byte
		switch {
		case k == smoketest.KindDispatcher:
			p = []byte(`{"batchItemFailures":[]}`)
		case k == smoketest.KindScheduler:
			p = []byte(`{"Answered":0,"Unknown":0,"Skipped":0,"NoticesSent":0,"NoticesDropped":0}`)
		case !canary || k == smoketest.KindNotifications:
			p = proxy(401, `{"errorCode":"yp_1001","message":"x"}`)
		case k == smoketest.KindConfig:
			p = proxy(200, `{"clientToken":"test_X","environment":"test"}`)
		case k == smoketest.KindPayments:
			p = proxy(200, `{"resultCode":"Authorised","pspReference":"PSP1"}`)
		case k == smoketest.KindSessions:
			p = proxy(400, `{"errorCode":"yp_2002","message":"x"}`)
		case k == smoketest.KindWebhooks:
			p = proxy(404, `{"errorCode":"yp_3007","message":"x"}`)
		default:
			p = proxy(404, `{"errorCode":"yp_3006","message":"x"}`)
		}
		return smoketest.Answer{Payload: p, ExecutedVersion: "8"}
	}
}

var hook = smoketest.Hook{DeploymentID: "d-ABC123", LifecycleEventHookExecutionID: "hook-1"}

func TestGateReportsTheOutcome(t *testing.T) {
	before := smoketest.Target{Function: "fn-config", Alias: "live", Version: "8", Phase: smoketest.BeforeAllowTraffic}
	after := before
	after.Phase = smoketest.AfterAllowTraffic
	kinds := map[string]smoketest.Kind{"fn-config": smoketest.KindConfig}
	canary := func(context.Context) (*smoketest.Canary, error) {
		return &smoketest.Canary{APIKey: "yp_test_k", SiteID: "site_c"}, nil
	}
	ok := healthy(smoketest.KindConfig, true)
	cases := []struct {
		name       string
		deploy     fakeDeployments
		answer     func([]byte) smoketest.Answer
		canary     func(context.Context) (*smoketest.Canary, error)
		kinds      map[string]smoketest.Kind
		wantReport bool
		wantCall   string // function:qualifier invoked ("" none)
		handleErr  bool
	}{
		{"passes before traffic: the version is invoked", fakeDeployments{targets: []smoketest.Target{before}}, ok, canary, kinds, true, "fn-config:8", false},
		{"passes after traffic: through the alias", fakeDeployments{targets: []smoketest.Target{after}}, ok, canary, kinds, true, "fn-config:live", false},
		{"wrong answer fails", fakeDeployments{targets: []smoketest.Target{before}}, func([]byte) smoketest.Answer {
			return smoketest.Answer{Payload: proxy(500, `{"errorCode":"yp_9000"}`)}
		}, canary, kinds, false, "fn-config:8", false},
		{"function error fails", fakeDeployments{targets: []smoketest.Target{before}}, func([]byte) smoketest.Answer {
			return smoketest.Answer{Payload: []byte(`{"errorType":"Runtime.ExitError"}`), FunctionError: "Unhandled"}
		}, canary, kinds, false, "fn-config:8", false},
		{"the alias still runs the old version", fakeDeployments{targets: []smoketest.Target{after}}, func(e []byte) smoketest.Answer {
			a := ok(e)
			a.ExecutedVersion = "7"
			return a
		}, canary, kinds, false, "fn-config:live", false},
		{"no target fails", fakeDeployments{}, ok, canary, kinds, false, "", false},
		{"targets unreadable fails", fakeDeployments{err: errors.New("AccessDenied")}, ok, canary, kinds, false, "", false},
		{"unknown function fails", fakeDeployments{targets: []smoketest.Target{before}}, ok, canary, map[string]smoketest.Kind{}, false, "", false},
		{"canary unreadable fails", fakeDeployments{targets: []smoketest.Target{before}}, ok, func(context.Context) (*smoketest.Canary, error) {
			return nil, errors.New("ResourceNotFound")
		}, kinds, false, "", false},
		{"without canary: the unauthenticated probe", fakeDeployments{targets: []smoketest.Target{before}},
			healthy(smoketest.KindConfig, false), nil, kinds, true, "fn-config:8", false},
		{"report failed: Handle errs", fakeDeployments{targets: []smoketest.Target{before}, reportErr: errors.New("throttled")}, ok, canary, kinds, true, "fn-config:8", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			inv := &fakeInvoker{answer: tc.answer}
			d := tc.deploy
			g := &smoketest.Gate{Deployments: &d, Invoker: inv, Kinds: tc.kinds, Canary: tc.canary,
				Log: slog.New(slog.DiscardHandler)}
			err := g.Handle(context.Background(), hook)
			if (err != nil) != tc.handleErr {
				t.Errorf("Handle error %v, want error %v", err, tc.handleErr)
			}
			if len(d.reports) != 1 || d.reports[0] != tc.wantReport {
				t.Errorf("reports %v, want one %v", d.reports, tc.wantReport)
			}
			if got := strings.Join(inv.calls, ","); got != tc.wantCall {
				t.Errorf("invoked %q, want %q", got, tc.wantCall)
			}
		})
	}
}

func TestGateRefusesAnIncompleteHook(t *testing.T) {
	d := &fakeDeployments{targets: []smoketest.Target{{Function: "f", Version: "2"}}}
	g := &smoketest.Gate{Deployments: d, Invoker: &fakeInvoker{}, Log: slog.New(slog.DiscardHandler)}
	if _, err := g.Run(context.Background(), smoketest.Hook{DeploymentID: "d-1"}); err == nil {
		t.Error("a hook without its execution id was run")
	}
}

// TestProbes: every kind has probes, with and without a canary key, in
// test and live; each accepts the answer of a working function and
// refuses a 500 and a crash's payload. Live never sends a payment.
func TestProbes(t *testing.T) {
	canary := &smoketest.Canary{APIKey: "yp_live_k", SiteID: "site_c"}
	for _, k := range smoketest.Kinds {
		for _, c := range []*smoketest.Canary{nil, canary} {
			for _, live := range []bool{false, true} {
				name := string(k)
				if c != nil {
					name += "/canary"
				}
				if live {
					name += "/live"
				}
				t.Run(name, func(t *testing.T) {
					probes, err := smoketest.Probes(k, smoketest.Env{Live: live, Canary: c, Tag: "smoke-d-1"})
					if err != nil || len(probes) == 0 {
						t.Fatalf("probes %v, %v", probes, err)
					}
					for _, p := range probes {
						good := healthy(k, c != nil)(p.Event).Payload
						if k == smoketest.KindConfig && live && c != nil {
							good = proxy(200, `{"clientToken":"live_X","environment":"live"}`)
						}
						if k == smoketest.KindPayments && live && c != nil {
							good = proxy(400, `{"errorCode":"yp_2002","message":"x"}`)
						}
						if err := p.Expect(good); err != nil {
							t.Errorf("%s refuses a working function's answer: %v", p.Name, err)
						}
						for _, bad := range [][]byte{proxy(500, `{"errorCode":"yp_9000"}`), []byte(`{"errorType":"Sandbox.Timedout"}`),
							[]byte(`{"batchItemFailures":[{"itemIdentifier":"m1"}]}`)} {
							if err := p.Expect(bad); err == nil {
								t.Errorf("%s accepts %s", p.Name, bad)
							}
						}
						if !json.Valid(p.Event) {
							t.Errorf("%s: event is not JSON", p.Name)
						}
						if live && strings.Contains(string(p.Event), "encryptedCardNumber") {
							t.Errorf("%s: a payment in live", p.Name)
						}
						if c != nil && k != smoketest.KindNotifications && k != smoketest.KindDispatcher && k != smoketest.KindScheduler &&
							!strings.Contains(string(p.Event), "Bearer yp_live_k") {
							t.Errorf("%s does not use the canary key: %s", p.Name, p.Event)
						}
					}
				})
			}
		}
	}
	if _, err := smoketest.Probes("nope", smoketest.Env{}); err == nil {
		t.Error("unknown kind accepted")
	}
	if _, err := smoketest.Probes(smoketest.KindConfig, smoketest.Env{Canary: &smoketest.Canary{APIKey: "k"}}); err == nil {
		t.Error("a canary without a site accepted")
	}
}

func TestParseKinds(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want map[string]smoketest.Kind
		err  bool
	}{
		{"config=fn-a, payments=fn-b", map[string]smoketest.Kind{"fn-a": smoketest.KindConfig, "fn-b": smoketest.KindPayments}, false},
		{"", nil, true},
		{"config", nil, true},
		{"teapot=fn-a", nil, true},
		{"config=", nil, true},
	} {
		got, err := smoketest.ParseKinds(tc.in)
		if (err != nil) != tc.err || (!tc.err && jsonText(got) != jsonText(tc.want)) {
			t.Errorf("ParseKinds(%q) = %v, %v; want %v (error %v)", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
