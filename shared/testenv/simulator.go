package testenv

import (
	"testing"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/upstream/simulator"
)

// newSimulator returns the upstream simulator for tests: the test API key,
// merchant B's account auto-captured.
func newSimulator(t testing.TB, clk clock.Clock) *simulator.Simulator {
	t.Helper()
	sim, err := simulator.New(simulator.Options{
		APIKey:              UpstreamAPIKey,
		HMACKeyHex:          HMACKey,
		AutoCaptureAccounts: []string{"BetaECOM"},
		Clock:               clk,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	return sim
}
