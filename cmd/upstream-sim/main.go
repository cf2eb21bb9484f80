// Command upstream-sim runs the upstream checkout simulator
// (shared/upstream/simulator) as a standalone HTTP server, for local runs of
// the service and for manual testing.
//
//	upstream-sim -addr 127.0.0.1:8081 -notify-url http://127.0.0.1:8080/notifications
//
// Secrets are best given through the environment (flags are visible in the
// process list): UPSTREAM_SIM_API_KEY, UPSTREAM_SIM_HMAC_KEY,
// UPSTREAM_SIM_NOTIFY_PASSWORD. They are never logged. Every flag has an
// UPSTREAM_SIM_* environment variable (see -h).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/yp/paysvc/shared/upstream/simulator"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "upstream-sim:", err)
		os.Exit(1)
	}
}

// config is the parsed command line.
type config struct {
	addr          string
	logLevel      slog.Level
	notifyURL     string
	notifyUser    string
	notifyPass    string
	notifyBackoff []time.Duration
	expireEvery   time.Duration
	opts          simulator.Options
}

func parseConfig(args []string, getenv func(string) string) (config, error) {
	var c config
	fs := flag.NewFlagSet("upstream-sim", flag.ContinueOnError)
	env := func(name, def string) string {
		if v := getenv("UPSTREAM_SIM_" + name); v != "" {
			return v
		}
		return def
	}
	dur := func(name string, def time.Duration) time.Duration {
		if v := getenv("UPSTREAM_SIM_" + name); v != "" {
			if d, err := time.ParseDuration(v); err == nil {
				return d
			}
		}
		return def
	}
	num := func(name string) int {
		n, _ := strconv.Atoi(getenv("UPSTREAM_SIM_" + name))
		return n
	}
	boolean := func(name string) bool {
		b, _ := strconv.ParseBool(getenv("UPSTREAM_SIM_" + name))
		return b
	}

	fs.StringVar(&c.addr, "addr", env("ADDR", "127.0.0.1:8081"), "listen address (UPSTREAM_SIM_ADDR)")
	logLevel := fs.String("log-level", env("LOG_LEVEL", "info"), "debug, info, warn or error (UPSTREAM_SIM_LOG_LEVEL)")
	fs.StringVar(&c.opts.APIKey, "api-key", env("API_KEY", ""), "expected X-API-Key; empty accepts any (UPSTREAM_SIM_API_KEY)")
	fs.StringVar(&c.opts.HMACKeyHex, "hmac-key", env("HMAC_KEY", ""), "notification HMAC key, hex; empty leaves notifications unsigned (UPSTREAM_SIM_HMAC_KEY)")
	fs.StringVar(&c.opts.BasePath, "base-path", env("BASE_PATH", simulator.DefaultBasePath), "API base path, e.g. /v71 or /checkout/v71 (UPSTREAM_SIM_BASE_PATH)")
	fs.StringVar(&c.opts.PublicURL, "public-url", env("PUBLIC_URL", ""), "URL the simulator is reached at, for redirect links; default from the request Host (UPSTREAM_SIM_PUBLIC_URL)")
	merchants := fs.String("merchant-accounts", env("MERCHANT_ACCOUNTS", ""), "comma-separated accepted merchant accounts; empty accepts any (UPSTREAM_SIM_MERCHANT_ACCOUNTS)")
	manualCapture := fs.String("manual-capture", env("MANUAL_CAPTURE", ""), "comma-separated merchant accounts whose default is manual capture, for requests that state none (UPSTREAM_SIM_MANUAL_CAPTURE)")
	fs.DurationVar(&c.opts.Latency, "latency", dur("LATENCY", 0), "latency added to every API request (UPSTREAM_SIM_LATENCY)")
	fs.DurationVar(&c.opts.HangTimeout, "hang-timeout", dur("HANG_TIMEOUT", simulator.DefaultHangTimeout), "longest hang of the timeout test card (UPSTREAM_SIM_HANG_TIMEOUT)")
	fs.BoolVar(&c.opts.StrictIdempotency, "strict-idempotency", boolean("STRICT_IDEMPOTENCY"), "reject a reused Idempotency-Key with a different body (UPSTREAM_SIM_STRICT_IDEMPOTENCY)")
	fs.BoolVar(&c.opts.AsyncModificationFailures, "async-modification-failures", boolean("ASYNC_MODIFICATION_FAILURES"), "answer refused modifications 201 + failed notification instead of 422 (UPSTREAM_SIM_ASYNC_MODIFICATION_FAILURES)")
	fs.BoolVar(&c.opts.PublishedShapes, "published-shapes", boolean("PUBLISHED_SHAPES"), "answer like the platform's published examples: no pspReference with an action, minimal details answers (UPSTREAM_SIM_PUBLISHED_SHAPES)")
	fs.BoolVar(&c.opts.WebThreeDS2, "web-3ds2", boolean("WEB_3DS2"), "3-D Secure 2 as on the web: fingerprint then challenge (nativeThreeDS preferred) or a redirect (UPSTREAM_SIM_WEB_3DS2)")
	fs.BoolVar(&c.opts.PlatformRules, "platform-rules", boolean("PLATFORM_RULES"), "enforce shopperName, storing and PreAuth amount-update rules (UPSTREAM_SIM_PLATFORM_RULES)")
	fs.StringVar(&c.opts.StateFile, "state-file", env("STATE_FILE", ""), "JSON file the simulator keeps its payments, sessions and open actions in, across restarts; empty keeps them in memory (UPSTREAM_SIM_STATE_FILE)")
	fs.StringVar(&c.notifyURL, "notify-url", env("NOTIFY_URL", ""), "notification endpoint; empty only records notifications (UPSTREAM_SIM_NOTIFY_URL)")
	fs.StringVar(&c.notifyUser, "notify-user", env("NOTIFY_USER", ""), "basic-auth user for notifications (UPSTREAM_SIM_NOTIFY_USER)")
	fs.StringVar(&c.notifyPass, "notify-password", env("NOTIFY_PASSWORD", ""), "basic-auth password for notifications (UPSTREAM_SIM_NOTIFY_PASSWORD)")
	backoff := fs.String("notify-backoff", env("NOTIFY_BACKOFF", ""), "comma-separated waits before notification retries; default upstream-like 2m,4m,…,8h (UPSTREAM_SIM_NOTIFY_BACKOFF)")
	fs.DurationVar(&c.opts.Faults.Delay, "notify-delay", dur("NOTIFY_DELAY", 0), "fault: delay before each notification (UPSTREAM_SIM_NOTIFY_DELAY)")
	fs.IntVar(&c.opts.Faults.Duplicate, "notify-duplicate", num("NOTIFY_DUPLICATE"), "fault: extra copies of each notification (UPSTREAM_SIM_NOTIFY_DUPLICATE)")
	fs.IntVar(&c.opts.Faults.Reorder, "notify-reorder", num("NOTIFY_REORDER"), "fault: hold N notifications and send them reversed (UPSTREAM_SIM_NOTIFY_REORDER)")
	fs.IntVar(&c.opts.Faults.DropEvery, "notify-drop-every", num("NOTIFY_DROP_EVERY"), "fault: drop every N-th notification (UPSTREAM_SIM_NOTIFY_DROP_EVERY)")
	fs.DurationVar(&c.expireEvery, "expire-offers-every", dur("EXPIRE_OFFERS_EVERY", time.Minute), "how often to close offers older than 12 h; 0 disables (UPSTREAM_SIM_EXPIRE_OFFERS_EVERY)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if err := c.logLevel.UnmarshalText([]byte(*logLevel)); err != nil {
		return c, fmt.Errorf("-log-level: %w", err)
	}
	c.opts.MerchantAccounts = splitList(*merchants)
	c.opts.ManualCaptureAccounts = splitList(*manualCapture)
	for _, s := range splitList(*backoff) {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			return c, fmt.Errorf("-notify-backoff: bad duration %q", s)
		}
		c.notifyBackoff = append(c.notifyBackoff, d)
	}
	return c, nil
}

func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

func run(ctx context.Context, args []string, getenv func(string) string) error {
	return serve(ctx, args, getenv, nil)
}

// serve is run, calling listening (when not nil) with the address once the
// server accepts connections.
func serve(ctx context.Context, args []string, getenv func(string) string, listening func(addr string)) error {
	c, err := parseConfig(args, getenv)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: c.logLevel}))
	c.opts.Logger = log

	if c.notifyURL != "" {
		n, err := simulator.NewHTTPNotifier(simulator.HTTPNotifierConfig{
			URL: c.notifyURL, Username: c.notifyUser, Password: c.notifyPass, Backoff: c.notifyBackoff, Logger: log,
		})
		if err != nil {
			return err
		}
		c.opts.Notifier = n
	}
	sim, err := simulator.New(c.opts)
	if err != nil {
		return err
	}
	defer sim.Close()

	ln, err := net.Listen("tcp", c.addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: sim, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}

	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	if c.expireEvery > 0 {
		go expireOffers(ctx, sim, c.expireEvery, log)
	}

	log.Info("upstream-sim listening",
		"addr", ln.Addr().String(), "basePath", sim.BasePath(), "apiKeyRequired", c.opts.APIKey != "",
		"notificationsSigned", c.opts.HMACKeyHex != "", "notifyURL", redact(c.notifyURL),
		"latency", c.opts.Latency, "manualCapture", c.opts.ManualCaptureAccounts)

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	if listening != nil {
		listening(ln.Addr().String())
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("upstream-sim shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		log.Warn("upstream-sim shutdown", "error", err)
	}
	flushCtx, cancelFlush := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancelFlush()
	if err := sim.Flush(flushCtx); err != nil {
		log.Warn("upstream-sim: notifications left undelivered", "error", err)
	}
	return nil
}

// expireOffers periodically closes unfinished redirects and challenges
// and expires authorisations past their validity (EXPIRE), as the platform
// does on its own time.
func expireOffers(ctx context.Context, sim *simulator.Simulator, every time.Duration, log *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if closed := sim.ExpireOffers(); len(closed) > 0 {
				log.Info("upstream-sim offers closed", "pspReferences", closed)
			}
			if expired := sim.ExpireAuthorisations(); len(expired) > 0 {
				log.Info("upstream-sim authorisations expired", "pspReferences", expired)
			}
		}
	}
}

// redact hides credentials in a URL.
func redact(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable)"
	}
	return u.Redacted()
}
