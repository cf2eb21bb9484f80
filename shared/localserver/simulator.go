package localserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/yp/paysvc/shared/adminapi"
	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/config"
	"github.com/yp/paysvc/shared/httpapi"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/upstream/simulator"
)

// StateFile is the simulator's state in the data directory.
const StateFile = "simulator.json"

// KeysFile holds the in-process simulator's keys in the data directory:
// its API key and the notification (HMAC) key, made at the first start.
const KeysFile = "simulator-keys.json"

// simKeys are the keys of KeysFile.
type simKeys struct {
	APIKey  string `json:"apiKey"`
	HMACKey string `json:"hmacKey"`
}

// dataDirKeys returns the keys made for dir, making them (random, mode
// 0600) on its first use: no key of the simulated upstream is a constant.
// They stay for the directory's life, so the simulator's kept
// Idempotency-Keys (scoped by API key) hold across restarts.
func dataDirKeys(dir string) (simKeys, error) {
	file := filepath.Join(dir, KeysFile)
	var k simKeys
	b, err := os.ReadFile(file)
	if err == nil {
		if json.Unmarshal(b, &k) != nil || k.APIKey == "" || k.HMACKey == "" {
			return k, fmt.Errorf("%s is not the simulator's keys; delete it (and %s) to start the simulator afresh", file, StateFile)
		}
		return k, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return k, err
	}
	raw := make([]byte, 56)
	if _, err := rand.Read(raw); err != nil {
		return k, err
	}
	k = simKeys{APIKey: "sim_" + hex.EncodeToString(raw[:24]), HMACKey: strings.ToUpper(hex.EncodeToString(raw[24:]))}
	if b, err = json.Marshal(k); err == nil {
		if err = os.MkdirAll(dir, 0o700); err == nil {
			err = os.WriteFile(file, b, 0o600)
		}
	}
	return k, err
}

// simulated is the upstream simulator serving on a loopback port, so the
// service's upstream client speaks real HTTP to it. It is created in two
// steps: the listener first (the service needs its URL), the simulator once
// the store is seeded (it needs the merchant accounts' platform settings).
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
// Its own listener answers only to its own Host, and serves its test hooks
// only in the test environment.
func (s *simulated) start(cfg config.Config, merchants []tenant.Merchant, log *slog.Logger, clk clock.Clock, serviceURL string, lenient bool) error {
	// Multiple partial captures are the platform account's setting, which
	// no request states: the simulated accounts mirror the merchants'.
	var multi []string
	for _, m := range merchants {
		if m.MultiplePartialCaptures && m.UpstreamAccount != "" {
			multi = append(multi, m.UpstreamAccount)
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
		APIKey:                         cfg.Secrets.APIKey,
		HMACKeyHex:                     cfg.Secrets.HMACKey,
		PublicURL:                      serviceURL,
		StateFile:                      stateFile,
		MultiplePartialCaptureAccounts: multi,
		PublishedShapes:                !lenient,
		WebThreeDS2:                    !lenient,
		PlatformRules:                  !lenient,
		Live:                           cfg.Environment == tenant.EnvLive,
		Notifier:                       notifier,
		Clock:                          clk,
		Logger:                         simLog,
	})
	if err != nil {
		return err
	}
	s.Sim = sim
	s.srv = &http.Server{
		Handler:           adminapi.GuardHosts(adminapi.AllowedHosts(s.ln.Addr()), []string{"/"}, simulatorRoutes(sim, cfg.Environment == tenant.EnvTest)),
		ReadHeaderTimeout: 10 * time.Second,
	}
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
