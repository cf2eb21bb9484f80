package localserver

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/config"
	"github.com/yp/paysvc/shared/upstream/simulator"
)

// simulated is the upstream simulator serving on a loopback port, so the
// service's upstream client speaks real HTTP to it.
type simulated struct {
	URL string
	Sim *simulator.Simulator
	srv *http.Server
}

// startSimulator runs the simulator on 127.0.0.1 with the local secrets.
// serviceURL is where its notifications would be posted.
func startSimulator(cfg config.Config, log *slog.Logger, clk clock.Clock, serviceURL string) (*simulated, error) {
	_ = serviceURL
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	sim, err := simulator.New(simulator.Options{
		APIKey:     cfg.Secrets.APIKey,
		HMACKeyHex: cfg.Secrets.HMACKey,
		PublicURL:  "http://" + ln.Addr().String(),
		Clock:      clk,
		Logger:     log.With("component", "upstream-simulator"),
	})
	if err != nil {
		ln.Close()
		return nil, err
	}
	srv := &http.Server{Handler: sim, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("upstream simulator stopped", "err", err.Error())
		}
	}()
	return &simulated{URL: "http://" + ln.Addr().String() + sim.BasePath(), Sim: sim, srv: srv}, nil
}

// Close stops the simulator.
func (s *simulated) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
	_ = s.Sim.Close()
}
