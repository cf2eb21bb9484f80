package simulator

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultNotifyTimeout bounds one delivery attempt (the upstream waits 10 s).
const DefaultNotifyTimeout = 10 * time.Second

// DefaultBackoff returns the upstream-like retry schedule: the waits before
// the 2nd, 3rd, … attempts (2 min doubling to 8 h, then 8 h).
func DefaultBackoff() []time.Duration {
	return []time.Duration{
		2 * time.Minute, 4 * time.Minute, 8 * time.Minute, 16 * time.Minute, 32 * time.Minute,
		time.Hour, 2 * time.Hour, 4 * time.Hour, 8 * time.Hour, 8 * time.Hour, 8 * time.Hour,
	}
}

// HTTPNotifierConfig configures an HTTPNotifier.
type HTTPNotifierConfig struct {
	// URL receives the notifications (POST, application/json).
	URL string
	// Username and Password, when Username is set, are sent as basic auth.
	Username, Password string
	// Client sends the requests; nil means a client that does not follow
	// redirects.
	Client *http.Client
	// Timeout bounds each attempt; default DefaultNotifyTimeout.
	Timeout time.Duration
	// Backoff lists the waits before each retry; nil means DefaultBackoff.
	// An empty non-nil slice disables retries.
	Backoff []time.Duration
	// Logger receives delivery logs; default discards.
	Logger *slog.Logger
}

// HTTPNotifier POSTs notifications to a URL and expects a 2xx answer whose
// body is "[accepted]", retrying on the backoff schedule like the upstream.
type HTTPNotifier struct {
	cfg      HTTPNotifierConfig
	redacted string
}

// NewHTTPNotifier validates cfg and returns a notifier.
func NewHTTPNotifier(cfg HTTPNotifierConfig) (*HTTPNotifier, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("simulator: notification URL must be an absolute http(s) URL")
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultNotifyTimeout
	}
	if cfg.Backoff == nil {
		cfg.Backoff = DefaultBackoff()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &HTTPNotifier{cfg: cfg, redacted: u.Redacted()}, nil
}

// Notify delivers body, retrying per the backoff schedule until accepted,
// the schedule is exhausted or ctx is done.
func (n *HTTPNotifier) Notify(ctx context.Context, body []byte) error {
	for attempt := 1; ; attempt++ {
		err := n.post(ctx, body)
		if err == nil {
			n.cfg.Logger.Debug("upstream-sim notification accepted", "url", n.redacted, "attempt", attempt)
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if attempt > len(n.cfg.Backoff) {
			return fmt.Errorf("notification to %s not accepted after %d attempts: %w", n.redacted, attempt, err)
		}
		wait := n.cfg.Backoff[attempt-1]
		n.cfg.Logger.Warn("upstream-sim notification not accepted, will retry", "url", n.redacted,
			"attempt", attempt, "retryIn", wait, "error", err)
		if err := sleep(ctx, wait); err != nil {
			return err
		}
	}
}

func (n *HTTPNotifier) post(ctx context.Context, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, n.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "upstream-sim notifier")
	if n.cfg.Username != "" {
		req.SetBasicAuth(n.cfg.Username, n.cfg.Password)
	}
	resp, err := n.cfg.Client.Do(req)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // url.Error repeats the URL, which may carry credentials
		}
		return err
	}
	defer resp.Body.Close()
	reply, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	if strings.TrimSpace(string(reply)) != "[accepted]" {
		return fmt.Errorf("HTTP %d without [accepted] body", resp.StatusCode)
	}
	return nil
}
