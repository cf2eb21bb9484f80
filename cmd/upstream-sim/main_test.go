package main

import (
	"context"
	"log/slog"
	"net/http"
	"testing"
	"time"
)

// waitTimeout bounds the waits for a signal: only a failure takes it.
const waitTimeout = 30 * time.Second

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestParseConfig(t *testing.T) {
	c, err := parseConfig([]string{"-addr", "127.0.0.1:9999", "-manual-capture", "A, B", "-notify-backoff", "1s,2s", "-notify-reorder", "3"},
		envOf(map[string]string{
			"UPSTREAM_SIM_API_KEY": "k", "UPSTREAM_SIM_HMAC_KEY": "AABB", "UPSTREAM_SIM_LATENCY": "5ms",
			"UPSTREAM_SIM_ADDR": "ignored:1", "UPSTREAM_SIM_STRICT_IDEMPOTENCY": "true", "UPSTREAM_SIM_LOG_LEVEL": "debug",
		}))
	if err != nil {
		t.Fatal(err)
	}
	if c.addr != "127.0.0.1:9999" || c.opts.APIKey != "k" || c.opts.HMACKeyHex != "AABB" || c.opts.Latency != 5*time.Millisecond ||
		!c.opts.StrictIdempotency || len(c.opts.ManualCaptureAccounts) != 2 || c.opts.ManualCaptureAccounts[1] != "B" ||
		len(c.notifyBackoff) != 2 || c.opts.Faults.Reorder != 3 || c.logLevel != slog.LevelDebug || c.opts.BasePath != "/v71" {
		t.Fatalf("config = %+v", c)
	}
	for _, bad := range [][]string{{"-notify-backoff", "x"}, {"-log-level", "loud"}, {"extra"}, {"-nope"}} {
		if _, err := parseConfig(bad, envOf(nil)); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

func TestRunStartsAndStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	addr := make(chan string, 1)
	go func() {
		done <- serve(ctx, []string{"-addr", "127.0.0.1:0", "-log-level", "error"}, envOf(nil), func(a string) { addr <- a })
	}()
	// Started: it listens and answers.
	select {
	case a := <-addr:
		req, _ := http.NewRequest(http.MethodGet, "http://"+a+"/_sim/notifications", nil)
		req.Header.Set("X-API-Key", "any")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /_sim/notifications: %d", resp.StatusCode)
		}
	case err := <-done:
		t.Fatalf("run ended before listening: %v", err)
	case <-time.After(waitTimeout):
		t.Fatal("run did not listen")
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("run did not stop")
	}
	if err := run(context.Background(), []string{"-hmac-key", "zz"}, envOf(nil)); err == nil {
		t.Fatal("bad HMAC key accepted")
	}
	if err := run(context.Background(), []string{"-notify-url", "ftp://x"}, envOf(nil)); err == nil {
		t.Fatal("bad notify URL accepted")
	}
}
