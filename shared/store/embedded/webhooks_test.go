package embedded_test

import (
	"path/filepath"
	"testing"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/store/embedded"
	"github.com/yp/paysvc/shared/store/storetest"
)

// openWebhookStore opens an empty store in a temp dir for t.
func openWebhookStore(t *testing.T, clk clock.Clock) *embedded.Store {
	t.Helper()
	s, err := embedded.Open(filepath.Join(t.TempDir(), "paysvc.db"), embedded.WithClock(clk))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestWebhookContract(t *testing.T) {
	storetest.RunWebhooks(t, func(t *testing.T, clk clock.Clock) storetest.WebhookStores {
		s := openWebhookStore(t, clk)
		return storetest.WebhookStores{Events: s, Deliveries: s, Payments: s}
	})
}

func TestSelfServiceContract(t *testing.T) {
	storetest.RunSelfService(t, func(t *testing.T, clk clock.Clock) storetest.SelfServiceStores {
		s := openWebhookStore(t, clk)
		return storetest.SelfServiceStores{History: s, Deliveries: s}
	})
}
