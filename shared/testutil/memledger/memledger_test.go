package memledger_test

import (
	"testing"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/store/storetest"
	"github.com/yp/paysvc/shared/testutil/memledger"
)

// The in-memory store keeps the contract the real ones keep.
func TestContract(t *testing.T) {
	storetest.TestPaymentStore(t, func(t *testing.T, clk clock.Clock) payments.Store { return memledger.New(clk) })
}
