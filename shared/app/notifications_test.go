package app

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/config"
)

// The notifications function does not start without the upstream's HMAC
// key (the secret's hmacKey, or PAYSVC_UPSTREAM_HMAC_KEY): no key is built
// in.
func TestNotificationsHandlerNeedsTheHMACKey(t *testing.T) {
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	clk := clock.NewFake(time.Date(2026, 11, 24, 3, 0, 0, 0, time.UTC))
	for _, tc := range []struct {
		key string
		ok  bool
	}{{"", false}, {"not hex", false}, {"0A1B2C3D", true}} {
		a := openApp(t, map[string]string{"PAYSVC_DATA_DIR": t.TempDir(), "PAYSVC_UPSTREAM_URL": "http://127.0.0.1:1", "PAYSVC_UPSTREAM_HMAC_KEY": tc.key},
			config.StoreEmbedded, log, clk)
		_, err := NotificationsHandler(context.Background(), a)
		if (err == nil) != tc.ok || err != nil && !strings.Contains(err.Error(), "PAYSVC_UPSTREAM_HMAC_KEY") {
			t.Errorf("key %q: %v", tc.key, err)
		}
	}
}
