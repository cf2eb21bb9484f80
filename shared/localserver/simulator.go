package localserver

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/config"
	"github.com/yp/paysvc/shared/httpapi"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/upstream/simulator"
)

// StateFile is the simulator's state in the data directory.
const StateFile = "simulator.json"

// simulated is the upstream simulator serving on a loopback port, so the
// service's upstream client speaks real HTTP to it. It is created in two
// steps: the listener first (the service needs its URL), the simulator once
// the store is seeded (it needs the auto-capture merchant accounts).
type simulated struct {
	URL string
	Sim *simulator.Simulator
	ln  net.Listener
	srv *http.Server
}

func listenSimulator() (*simulated, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	return &simulated{ln: ln, URL: "http://" + ln.Addr().String() + "/v71"}, nil
}

// start serves the simulator. Its notifications are posted, signed with the
// local HMAC key, to the service's notifications endpoint at serviceURL;
// its pages are linked at serviceURL/_sim/… (the service serves them), so
// links stay the same across restarts; its state is kept in the data
// directory (embedded store). It runs like the platform unless lenient.
func (s *simulated) start(cfg config.Config, merchants []tenant.Merchant, log *slog.Logger, clk clock.Clock, serviceURL string, lenient bool) error {
	var auto []string
	for _, m := range merchants {
		if m.CaptureMode == tenant.CaptureAuto && m.UpstreamAccount != "" {
			auto = append(auto, m.UpstreamAccount)
		}
	}
	simLog := log.With("component", "upstream-simulator")
	notifier, err := simulator.NewHTTPNotifier(simulator.HTTPNotifierConfig{
		URL:      serviceURL + httpapi.NotificationsPath,
		Username: cfg.Secrets.NotificationUsername,
		Password: cfg.Secrets.NotificationPassword,
		Logger:   simLog,
	})
	if err != nil {
		return err
	}
	var stateFile string
	if cfg.Store == config.StoreEmbedded {
		stateFile = filepath.Join(cfg.DataDir, StateFile)
	}
	sim, err := simulator.New(simulator.Options{
		APIKey:              cfg.Secrets.APIKey,
		HMACKeyHex:          cfg.Secrets.HMACKey,
		PublicURL:           serviceURL,
		StateFile:           stateFile,
		AutoCaptureAccounts: auto,
		PublishedShapes:     !lenient,
		WebThreeDS2:         !lenient,
		PlatformRules:       !lenient,
		Notifier:            notifier,
		Clock:               clk,
		Logger:              simLog,
	})
	if err != nil {
		return err
	}
	s.Sim = sim
	s.srv = &http.Server{Handler: sim, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := s.srv.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("upstream simulator stopped", "err", err.Error())
		}
	}()
	return nil
}

// Close stops the simulator (or just its listener if it never started).
func (s *simulated) Close() {
	if s.srv == nil {
		_ = s.ln.Close()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
	_ = s.Sim.Close()
}
