package testenv

import (
	"testing"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/upstream/simulator"
)

// newSimulator returns the upstream simulator for tests: the test API key
// (the service states each payment's capture mode), merchant A's account
// with multiple partial captures, as the merchant is seeded; adjust (nil: none) changes the
// options before it starts.
func newSimulator(t testing.TB, clk clock.Clock, adjust func(*simulator.Options)) *simulator.Simulator {
	t.Helper()
	opts := simulator.Options{
		APIKey:                         UpstreamAPIKey,
		HMACKeyHex:                     HMACKey,
		MultiplePartialCaptureAccounts: []string{"AlphaECOM"},
		Clock:                          clk,
	}
	if adjust != nil {
		adjust(&opts)
	}
	sim, err := simulator.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	return sim
}
