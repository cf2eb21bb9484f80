// Package localserver runs every route of the service on one HTTP server
// for development (`make run`), with the embedded store and, unless
// PAYSVC_UPSTREAM_URL is set, the upstream simulator in-process.
package localserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/yp/paysvc/shared/app"
	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/config"
	"github.com/yp/paysvc/shared/httpapi"
	"github.com/yp/paysvc/shared/provision"
)

// Local defaults for the in-process simulator. They are test-environment
// values with no meaning outside this machine.
const (
	SimAPIKey  = "sim_local_api_key"
	SimHMACKey = "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056"
)

// Run serves until ctx ends. Logs (JSON) go to logw; the human banner to bannerw.
func Run(ctx context.Context, getenv func(string) string, logw, bannerw io.Writer) error {
	cfg, err := config.FromEnv(getenv, config.StoreEmbedded)
	if err != nil {
		return err
	}
	log := app.NewLogger(logw, cfg.LogLevel)
	clk := clock.System{}

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s (set PAYSVC_ADDR to change): %w", cfg.Addr, err)
	}
	defer ln.Close()
	baseURL := "http://" + ln.Addr().String()

	var sim *simulated
	if cfg.UpstreamURL == "" {
		if cfg.Secrets.APIKey == "" {
			cfg.Secrets.APIKey = SimAPIKey
		}
		if cfg.Secrets.HMACKey == "" {
			cfg.Secrets.HMACKey = SimHMACKey
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
	demoKey, err := seed(ctx, cfg, prov)
	if err != nil {
		return err
	}
	if sim != nil {
		merchants, err := a.Stores.Tenants.ListMerchants(ctx)
		if err != nil {
			return err
		}
		if err := sim.start(cfg, merchants, log, clk, baseURL); err != nil {
			return err
		}
	}

	// Notifications in, webhooks out: the notifications endpoint beside the
	// API, and the delivery worker (local queue, or SQS on moto).
	queues, err := app.OpenQueues(ctx, a.Config, a.Stores, clk, log)
	if err != nil {
		return err
	}
	recv, err := app.NewReceiver(a, queues.Queue)
	if err != nil {
		return err
	}
	dispatcher := app.NewDispatcher(a, app.DispatcherOptions{})
	workerCtx, stopWorker := context.WithCancel(context.WithoutCancel(ctx))
	workerDone := make(chan struct{})
	go func() {
		defer close(workerDone)
		if queues.Local != nil {
			_ = queues.Local.Run(workerCtx, dispatcher.Process)
			return
		}
		queues.SQS.Poll(workerCtx, dispatcher.Process, log)
	}()
	defer func() { stopWorker(); <-workerDone }()

	api := httpapi.NewHandler(a.Deps, httpapi.ConfigRoutes(a.Deps), httpapi.SessionsRoutes(a.Deps),
		httpapi.PaymentsRoutes(a.Deps), httpapi.ModificationsRoutes(a.Deps))
	h := httpapi.Notifications(a.Deps, recv, app.NotificationAuth(a.Secrets), api)
	srv := &http.Server{
		Handler:           withOpenAPI(h),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
	}
	banner(bannerw, baseURL, cfg, demoKey, sim != nil)
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

// seed applies PAYSVC_SEED_FILE, or on a first start with an empty store
// creates the demo tenant. It returns the demo key to print, if any.
func seed(ctx context.Context, cfg config.Config, prov *provision.Provisioner) (string, error) {
	if cfg.SeedFile != "" {
		s, err := provision.LoadSeed(cfg.SeedFile)
		if err != nil {
			return "", err
		}
		return "", prov.ApplySeed(ctx, s)
	}
	keyFile := filepath.Join(cfg.DataDir, "demo-key.txt")
	if cfg.Store == config.StoreEmbedded {
		if b, err := os.ReadFile(keyFile); err == nil {
			return strings.TrimSpace(string(b)), nil
		}
	}
	ms, err := prov.Store.ListMerchants(ctx)
	if err != nil || len(ms) > 0 {
		return "", err
	}
	demo, err := provision.Demo(cfg.Environment)
	if err != nil {
		return "", err
	}
	if err := prov.ApplySeed(ctx, demo); err != nil {
		return "", err
	}
	key := demo.APIKeys[0].Key
	if cfg.Store == config.StoreEmbedded {
		// A local convenience: the demo key of a local test-environment
		// store, so later starts can print it again.
		if err := os.WriteFile(keyFile, []byte(key+"\n"), 0o600); err != nil {
			return "", err
		}
	}
	return key, nil
}

func banner(w io.Writer, baseURL string, cfg config.Config, demoKey string, simulated bool) {
	fmt.Fprintf(w, "\npaysvc listening on %s (environment %s, store %s", baseURL, cfg.Environment, cfg.Store)
	if cfg.Store == config.StoreEmbedded {
		fmt.Fprintf(w, " in %s", cfg.DataDir)
	}
	fmt.Fprintln(w, ")")
	fmt.Fprintf(w, "API contract (OpenAPI 3.1): %s%s\n", baseURL, OpenAPIPath)
	if simulated {
		fmt.Fprintf(w, "upstream: simulated in-process at %s\n", cfg.UpstreamURL)
	}
	if demoKey != "" {
		fmt.Fprintf(w, `
Demo merchant m_demo, site site_demo, API key (local test key):
  %[2]s

Try:
  curl -s %[1]s/v1/ecom/config -H 'Authorization: Bearer %[2]s'
  curl -s %[1]s/v1/ecom/site_demo/sessions -H 'Authorization: Bearer %[2]s' \
    -H 'Content-Type: application/json' -H 'Idempotency-Key: order-1001' \
    -d '{"amount":{"value":1000,"currency":"EUR"},"returnUrl":"https://shop.example/return","reference":"order-1001"}'
`, baseURL, demoKey)
	}
	fmt.Fprintln(w)
}
