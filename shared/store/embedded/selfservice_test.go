package embedded_test

import (
	"testing"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/store/storetest"
)

func TestSelfServiceContract(t *testing.T) {
	storetest.RunSelfService(t, func(t *testing.T, clk clock.Clock) storetest.SelfServiceStores {
		s := openWebhookStore(t, clk)
		return storetest.SelfServiceStores{History: s, Deliveries: s}
	})
}
