// Package localserver runs every route of the service on one HTTP server
// for development (`make run`), with the embedded store and, unless
// PAYSVC_UPSTREAM_URL is set, the upstream simulator in-process (platform-
// like, its state and keys in the data directory, its pages on this port).
// On a loopback address in the test environment it also serves the
// dashboard (package dashboard), the admin API paysvc-admin goes through
// while the server holds the store (package adminapi) and the simulator's
// test hooks; those, the simulator's pages and the notifications endpoint
// answer only to the server's own Host (docs/security.md).
package localserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/yp/paysvc/shared/adminapi"
	"github.com/yp/paysvc/shared/app"
	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/config"
	"github.com/yp/paysvc/shared/dashboard"
	"github.com/yp/paysvc/shared/httpapi"
	"github.com/yp/paysvc/shared/provision"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/upstream/simulator"
	"github.com/yp/paysvc/shared/webhooks/sender"
)

// procsForSyncedCommits sets GOMAXPROCS to twice the CPUs (unless the
// GOMAXPROCS environment variable sets it). The embedded store's commits
// wait in fdatasync, and a thread in a system call keeps its P until the
// scheduler takes it back: with one P per CPU, a core can sit idle while
// requests are ready to run (what it bought: BENCHMARKS.md, history).
func procsForSyncedCommits(log *slog.Logger) {
	if os.Getenv("GOMAXPROCS") != "" {
		return
	}
	if n := 2 * runtime.NumCPU(); runtime.GOMAXPROCS(0) < n {
		runtime.GOMAXPROCS(n)
		log.Debug("GOMAXPROCS raised for the embedded store's synced commits", "gomaxprocs", n)
	}
}

// Run serves until ctx ends. Logs (JSON) go to logw; the human banner to bannerw.
func Run(ctx context.Context, getenv func(string) string, logw, bannerw io.Writer) error {
	cfg, err := config.FromEnv(getenv, config.StoreEmbedded)
	if err != nil {
		return err
	}
	log := app.NewLogger(logw, cfg.LogLevel)
	clk := clock.System{}
	if cfg.Store == config.StoreEmbedded {
		procsForSyncedCommits(log)
	}
	// Local development receives webhooks on this machine: in the test
	// environment local targets are allowed unless PAYSVC_WEBHOOK_ALLOW_LOCAL
	// says otherwise (false: refused, as deployed stages refuse them).
	localByDefault := getenv("PAYSVC_WEBHOOK_ALLOW_LOCAL") == "" && cfg.Environment == tenant.EnvTest
	if localByDefault {
		cfg.WebhookAllowLocal = true
	}

	lenient, err := simLenient(getenv)
	if err != nil {
		return err
	}
	if cfg.Secrets.HMACKey == "" && cfg.UpstreamSecretARN == "" && (cfg.UpstreamURL != "" || cfg.Environment != tenant.EnvTest) {
		return errors.New("PAYSVC_UPSTREAM_HMAC_KEY is required: the local server makes a notification key of its own only in the test environment with the simulated upstream (PAYSVC_UPSTREAM_URL unset)")
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s (set PAYSVC_ADDR to change): %w", cfg.Addr, err)
	}
	defer ln.Close()
	baseURL := "http://" + ln.Addr().String()
	// The dashboard and the admin API: loopback, test environment only.
	localRefused := adminapi.LocalRoutesRefused(ln.Addr(), cfg.Environment)

	var sim *simulated
	if cfg.UpstreamURL == "" {
		keys, err := dataDirKeys(cfg.DataDir)
		if err != nil {
			return err
		}
		if cfg.Secrets.APIKey == "" {
			cfg.Secrets.APIKey = keys.APIKey
		}
		if cfg.Secrets.HMACKey == "" {
			cfg.Secrets.HMACKey = keys.HMACKey
		}
		if sim, err = listenSimulator(); err != nil {
			return err
		}
		defer sim.Close()
		cfg.UpstreamURL = sim.URL
	}

	if err := app.EnsureTable(ctx, cfg); err != nil {
		return err
	}
	if err := app.EnsureQueues(ctx, &cfg); err != nil {
		return err
	}
	a, err := app.New(ctx, cfg, log, clk)
	if err != nil {
		return err
	}
	defer a.Stores.Close()

	prov := &provision.Provisioner{Store: a.Stores.Tenants, Env: cfg.Environment, Clock: clk}
	seeded, err := seed(ctx, cfg, prov)
	if err != nil {
		return err
	}
	targets, err := webhookTargets(ctx, a.Stores.Tenants, cfg.WebhookAllowLocal)
	if err != nil {
		return err
	}
	for _, tg := range targets {
		if tg.refused != nil {
			log.Error("webhook target refused by this server: its deliveries fail",
				"merchant", tg.merchantID, "subscriptionId", tg.id, "reason", tg.refused.Error(),
				"fix", "unset PAYSVC_WEBHOOK_ALLOW_LOCAL (local targets are allowed by default in the test environment) or set it to true")
		}
	}
	if sim != nil {
		merchants, err := a.Stores.Tenants.ListMerchants(ctx)
		if err != nil {
			return err
		}
		if err := sim.start(cfg, merchants, log, clk, baseURL, lenient); err != nil {
			return err
		}
	}

	// Notifications in, webhooks out: the notifications endpoint beside the
	// API, and the delivery worker (local queue, or SQS on moto).
	queues, err := app.OpenQueues(ctx, a.Config, a.Stores, clk, log)
	if err != nil {
		return err
	}
	recv, err := app.NewInbox(a, queues.Queue)
	if err != nil {
		return err
	}
	dispatcher := app.NewDispatcher(a, app.DispatcherOptions{})
	workerCtx, stopWorker := context.WithCancel(context.WithoutCancel(ctx))
	var background sync.WaitGroup
	defer func() { stopWorker(); background.Wait() }()
	background.Go(func() {
		if queues.Local != nil {
			_ = queues.Local.Run(workerCtx, dispatcher.Process)
			return
		}
		queues.SQS.Poll(workerCtx, dispatcher.Process, clk, log)
	})
	// The scheduler's passes (docs/expiry.md): recovery and the pre-expiry
	// notices, on its local ticker.
	background.Go(func() {
		var platform func() // the in-process platform's own timed work
		if sim != nil && sim.Sim != nil {
			platform = func() { sim.Sim.ExpireAuthorisations() }
		}
		app.RunScheduler(workerCtx, a, queues.Queue, platform)
	})
	if a.Stores.Sweeper != nil {
		// Retention (docs/limits.md): DynamoDB's TTL in AWS, this sweep here.
		background.Go(func() { a.Stores.Sweeper.SweepEvery(workerCtx, app.SweepInterval, log) })
	}

	if err := app.WireWebhookSelfService(ctx, a, queues.Queue, nil); err != nil {
		return err
	}
	// The dashboard and the admin API read through the merchant API with
	// keys of their own, in memory only.
	keys := adminapi.NewKeys(cfg.Environment, clk.Now)
	a.Deps.Auth = tenant.NewAuthenticator(keys.Tenants(a.Stores.Tenants), cfg.Environment, clk, cfg.AuthCacheTTL)
	api := httpapi.NewHandler(a.Deps, httpapi.ConfigRoutes(a.Deps), httpapi.SessionsRoutes(a.Deps),
		httpapi.PaymentsRoutes(a.Deps), httpapi.ModificationsRoutes(a.Deps), httpapi.LookupsRoutes(a.Deps),
		httpapi.WebhooksRoutes(a.Deps))
	var h http.Handler = httpapi.Notifications(a.Deps, recv, app.NotificationAuth(a.Secrets), api)
	requests := dashboard.NewRequestLog(200, dashboard.Prefix, adminapi.Prefix, "/favicon.ico")
	var local *localRoutes
	if localRefused == "" {
		local = newLocalRoutes(localDeps{
			h: h, keys: keys, a: a, queues: queues, sim: sim, clk: clk, getenv: getenv,
			baseURL: baseURL, lenient: lenient, requests: requests,
		})
		h = local.inner
	}
	if sim != nil {
		h = withSimulatorHooks(h, simulatorRoutes(sim.Sim, localRefused == ""), cfg.Secrets.APIKey)
	}
	h = withOpenAPI(h)
	if local != nil {
		h = local.wrap(h, ln.Addr())
	}
	srv := &http.Server{
		Handler:           requests.Wrap(h),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
	}
	var simURL string
	if sim != nil {
		simURL = sim.URL
	}
	if local != nil {
		srv.RegisterOnShutdown(local.local.Hub.CloseAll)
		if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
			return err
		}
		if err := adminapi.WriteFiles(cfg.DataDir, adminapi.Endpoint{URL: baseURL, PID: os.Getpid(), Token: local.token}); err != nil {
			return fmt.Errorf("the admin API's files in %s: %w", cfg.DataDir, err)
		}
		defer adminapi.RemoveFiles(cfg.DataDir)
	} else {
		log.Info("no dashboard or admin API: "+localRefused, "addr", baseURL)
	}
	banner(bannerw, bannerInfo{baseURL: baseURL, cfg: cfg, seeded: seeded, simURL: simURL,
		localByDefault: localByDefault, targets: targets, localRefused: localRefused, lenient: lenient})
	log.Info("listening", "addr", baseURL, "store", cfg.Store, "dataDir", cfg.DataDir, "environment", string(cfg.Environment))

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	log.Info("stopped")
	return nil
}

// seeded is what this start provisioned, for the banner: the seed file's
// tenants (keys as written in the file), or the demo tenant.
type seeded struct {
	file string         // PAYSVC_SEED_FILE, when used
	seed provision.Seed // the tenants seeded (the demo's on a first start)
	demo bool           // the demo tenant (key kept in demo-key.txt)
}

// seed applies PAYSVC_SEED_FILE, or on a first start with an empty store
// in the test environment creates the demo tenant. A later start prints
// the demo key again. The live environment has no demo tenant.
func seed(ctx context.Context, cfg config.Config, prov *provision.Provisioner) (seeded, error) {
	if cfg.SeedFile != "" {
		s, err := provision.LoadSeed(cfg.SeedFile)
		if err != nil {
			return seeded{}, err
		}
		return seeded{file: cfg.SeedFile, seed: s}, prov.ApplySeed(ctx, s)
	}
	if cfg.Environment != tenant.EnvTest {
		return seeded{}, nil
	}
	keyFile := filepath.Join(cfg.DataDir, "demo-key.txt")
	demo, err := provision.Demo(cfg.Environment)
	if err != nil {
		return seeded{}, err
	}
	if cfg.Store == config.StoreEmbedded {
		if b, err := os.ReadFile(keyFile); err == nil {
			demo.APIKeys[0].Key = strings.TrimSpace(string(b))
			return seeded{seed: demo, demo: true}, nil
		}
	}
	ms, err := prov.Store.ListMerchants(ctx)
	if err != nil || len(ms) > 0 {
		return seeded{}, err
	}
	if err := prov.ApplySeed(ctx, demo); err != nil {
		return seeded{}, err
	}
	if cfg.Store == config.StoreEmbedded {
		// A local convenience: the demo key of a local test-environment
		// store, so later starts can print it again.
		if err := os.WriteFile(keyFile, []byte(demo.APIKeys[0].Key+"\n"), 0o600); err != nil {
			return seeded{}, err
		}
	}
	return seeded{seed: demo, demo: true}, nil
}

// target is a webhook subscription's target as this server sees it.
type target struct {
	merchantID, id, url string
	refused             error // why this server refuses it (nil: delivered)
}

// webhookTargets lists every subscription's target with whether this
// server delivers to it, so a refused local target is reported at start,
// not after its first failed attempt.
func webhookTargets(ctx context.Context, tenants tenant.Store, allowLocal bool) ([]target, error) {
	ms, err := tenants.ListMerchants(ctx)
	if err != nil {
		return nil, err
	}
	var out []target
	for _, m := range ms {
		subs, err := tenants.ListSubscriptions(ctx, m.ID)
		if err != nil {
			return nil, err
		}
		for _, sub := range subs {
			if !sub.Enabled {
				continue
			}
			_, _, err := sender.CheckTarget(sub.URL, allowLocal)
			out = append(out, target{merchantID: m.ID, id: sub.ID, url: sub.URL, refused: err})
		}
	}
	return out, nil
}

// withSimulatorHooks serves the simulator's routes under /_sim/ (sim, from
// simulatorRoutes) on the service's own port, so a session is paid by hand
// with one URL; the simulator's API key is added when the request has none.
func withSimulatorHooks(next http.Handler, sim http.Handler, apiKey string) http.Handler {
	// A prefix test, not a ServeMux: a mux would redirect unclean paths
	// before the API's own handler could answer them.
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, SimHooksPrefix) {
			next.ServeHTTP(w, r)
			return
		}
		if r.Header.Get("X-API-Key") == "" {
			r = r.Clone(r.Context())
			r.Header.Set("X-API-Key", apiKey)
		}
		sim.ServeHTTP(w, r)
	})
}

// simulatorRoutes is sim with its test hooks when hooks is set; without,
// its upstream API and shopper pages only, other /_sim/ paths 404. The
// hooks change and reveal the simulator's state: they are for a loopback
// server in the test environment.
func simulatorRoutes(sim http.Handler, hooks bool) http.Handler {
	if hooks {
		return sim
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, SimHooksPrefix) && !simulator.ShopperPage(r.URL.Path) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"errorCode":"sim_not_found","message":"the simulator's test hooks are served only on a loopback address in the test environment"}`+"\n")
			return
		}
		sim.ServeHTTP(w, r)
	})
}

// SimHooksPrefix is where the simulator's test hooks are served.
const SimHooksPrefix = "/_sim/"

// bannerInfo is what the start-up banner shows.
type bannerInfo struct {
	baseURL        string
	cfg            config.Config
	seeded         seeded
	simURL         string // "" when the upstream is not simulated
	localByDefault bool
	targets        []target
	localRefused   string // why there is no dashboard or admin API ("": there are)
	lenient        bool   // the simulator's lenient mode
}

// banner prints, for a human: where the service listens, its dashboard,
// the simulator, whether webhooks to this machine are delivered, what was
// seeded (keys as given) and the webhook subscriptions. The README's
// walk-through shows it as printed (tests/quickstart_test.go compares).
func banner(w io.Writer, b bannerInfo) {
	cfg := b.cfg
	fmt.Fprintf(w, "\npaysvc listening on %s (environment %s, store %s", b.baseURL, cfg.Environment, cfg.Store)
	if cfg.Store == config.StoreEmbedded {
		fmt.Fprintf(w, " in %s", cfg.DataDir)
	}
	fmt.Fprintln(w, ")")
	fmt.Fprintf(w, "API contract (OpenAPI 3.1): %s%s\n", b.baseURL, OpenAPIPath)
	if b.localRefused == "" {
		fmt.Fprintf(w, "dashboard: %s%s (paysvc-admin goes through this server too)\n", b.baseURL, dashboard.Prefix)
	} else {
		fmt.Fprintf(w, "no dashboard or admin API: %s\n", b.localRefused)
	}
	if b.simURL != "" {
		fmt.Fprintf(w, "upstream: simulated in-process at %s (X-API-Key %s), %s\n", b.simURL, cfg.Secrets.APIKey, simulatorMode(b.lenient))
		if b.localRefused == "" {
			fmt.Fprintf(w, "  its test hooks and shopper pages are served here, key added: %s%s...\n", b.baseURL, SimHooksPrefix)
		} else {
			fmt.Fprintf(w, "  its shopper pages are served here (%s%s...); its test hooks are not\n", b.baseURL, SimHooksPrefix)
		}
	}
	if cfg.WebhookAllowLocal {
		how := "PAYSVC_WEBHOOK_ALLOW_LOCAL=true"
		if b.localByDefault {
			how = "the test environment's local default; PAYSVC_WEBHOOK_ALLOW_LOCAL=false refuses them"
		}
		fmt.Fprintf(w, "webhooks: delivered to this machine too (127.0.0.1, localhost: %s)\n", how)
	}

	sd := b.seeded
	switch {
	case sd.file != "":
		fmt.Fprintf(w, "\nSeeded from %s:\n", sd.file)
	case sd.demo:
		fmt.Fprintln(w, "\nDemo tenant (delete the data directory to start over):")
	}
	for _, m := range sd.seed.Merchants {
		fmt.Fprintf(w, "  merchant %s (%s)\n", m.ID, m.Name)
		for _, s := range sd.seed.Sites {
			if s.MerchantID == m.ID {
				fmt.Fprintf(w, "    site %s (%s, %s)\n", s.ID, s.Name, s.Type)
			}
		}
		for _, k := range sd.seed.APIKeys {
			if k.MerchantID != m.ID {
				continue
			}
			state := ""
			if k.Revoked {
				state = " REVOKED"
			}
			fmt.Fprintf(w, "    API key %s (%s)%s\n", k.Key, k.Name, state)
		}
	}
	if len(b.targets) > 0 {
		fmt.Fprintln(w, "\nWebhook subscriptions:")
		for _, tg := range b.targets {
			if tg.refused != nil {
				fmt.Fprintf(w, "  %s/%s -> %s  REFUSED: %v\n", tg.merchantID, tg.id, tg.url, tg.refused)
				fmt.Fprintln(w, "    deliveries to it fail at once; unset PAYSVC_WEBHOOK_ALLOW_LOCAL (or set it to true) and restart")
				continue
			}
			fmt.Fprintf(w, "  %s/%s -> %s\n", tg.merchantID, tg.id, tg.url)
		}
	}
	fmt.Fprintln(w)
}
