package localserver

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"

	"github.com/yp/paysvc/shared/adminapi"
	"github.com/yp/paysvc/shared/admincli"
	"github.com/yp/paysvc/shared/app"
	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/dashboard"
	"github.com/yp/paysvc/shared/httpapi"
)

// simLenient reads PAYSVC_SIM_LENIENT: false (the default) runs the
// simulator like the platform (published answer shapes, 3-D Secure as on
// the web, the platform's rules); true runs it lenient (answers echo the
// pspReference, a challenge card challenges at once, no rules).
func simLenient(getenv func(string) string) (bool, error) {
	v := strings.TrimSpace(getenv("PAYSVC_SIM_LENIENT"))
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("PAYSVC_SIM_LENIENT=%q: true or false", v)
	}
	return b, nil
}

// simulatorMode describes the simulator's mode for people.
func simulatorMode(lenient bool) string {
	if lenient {
		return "lenient (PAYSVC_SIM_LENIENT=true: answers echo the pspReference, challenge cards challenge at once, no platform rules)"
	}
	return "platform-like (answers as published, 3-D Secure as on the web, the platform's rules; PAYSVC_SIM_LENIENT=true for the lenient mode)"
}

// localDeps is what the local routes are built from.
type localDeps struct {
	h        http.Handler // the API and the notifications endpoint
	keys     *adminapi.Keys
	a        *app.App
	queues   *app.Queues
	sim      *simulated // nil when the upstream is not simulated
	clk      clock.Clock
	getenv   func(string) string
	baseURL  string
	lenient  bool
	requests *dashboard.RequestLog
}

// localRoutes are the dashboard and the admin API of a loopback server in
// the test environment.
type localRoutes struct {
	inner http.Handler // the API and notifications, telling listeners of each notification
	local *adminapi.Local
	dash  *dashboard.Dashboard
	admin *adminapi.Server
	token string
}

func newLocalRoutes(d localDeps) *localRoutes {
	local := adminapi.NewLocal(adminapi.Local{
		Keys: d.keys, Tenants: d.a.Stores.Tenants, DeliveryStore: d.a.Stores.Deliveries,
		Queue: d.queues.Local, Jobs: d.a.Stores.Jobs, Secrets: d.a.Secrets, Clock: d.clk,
	})
	if d.queues.Local == nil {
		local.Jobs = nil // deliveries go through SQS
	}
	if d.sim != nil {
		local.Sim = d.sim.Sim
	}
	inner := local.Hub.Wrap(d.h)
	local.Handler = inner
	local.Actions = d.requests.Wrap(inner) // the dashboard's and trigger's posts are recent requests too
	cfg := d.a.Config
	info := dashboard.Info{BaseURL: d.baseURL, Environment: string(cfg.Environment), DataDir: cfg.DataDir}
	if d.sim != nil {
		info.SimulatorMode = simulatorMode(d.lenient)
	}
	dash := dashboard.New(local, d.requests, info)
	token := adminapi.NewToken()
	server := &admincli.Server{Config: cfg, Stores: d.a.Stores, Queues: d.queues, Local: local}
	admin := &adminapi.Server{
		Token: token, Local: local,
		Status: adminapi.Status{URL: d.baseURL, PID: os.Getpid(), Environment: string(cfg.Environment), DataDir: cfg.DataDir, Dashboard: d.baseURL + dashboard.Prefix},
		Exec: func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
			return admincli.Options{Clock: d.clk, Server: server}.Run(ctx, args, d.getenv, stdout, stderr)
		},
	}
	return &localRoutes{inner: inner, local: local, dash: dash, admin: admin, token: token}
}

// wrap serves the dashboard and the admin API beside next, and lets the
// local routes (those two, the simulator's /_sim and the notifications
// endpoint) answer only to this server's own Host.
func (l *localRoutes) wrap(next http.Handler, addr net.Addr) http.Handler {
	mux := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		switch {
		case strings.HasPrefix(p, dashboard.Prefix) || p == strings.TrimSuffix(dashboard.Prefix, "/"):
			l.dash.ServeHTTP(w, r)
		case strings.HasPrefix(p, adminapi.Prefix):
			l.admin.ServeHTTP(w, r)
		case p == "/" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
			http.Redirect(w, r, dashboard.Prefix, http.StatusFound)
		default:
			next.ServeHTTP(w, r)
		}
	})
	return adminapi.GuardHosts(adminapi.AllowedHosts(addr),
		[]string{strings.TrimSuffix(dashboard.Prefix, "/"), "/_admin/", SimHooksPrefix, httpapi.NotificationsPath}, mux)
}
