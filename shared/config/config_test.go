package config

import (
	"strings"
	"testing"
)

func TestPaymentFormat(t *testing.T) {
	for _, tc := range []struct {
		name, store, format string
		want, err           string
	}{
		{"default", StoreDynamo, "", PaymentFormatLedger, ""},
		{"the bridge release", StoreDynamo, "legacy", PaymentFormatLegacy, ""},
		{"ledger named", StoreEmbedded, "ledger", PaymentFormatLedger, ""},
		{"the bridge on the embedded store", StoreEmbedded, "legacy", "", "PAYSVC_PAYMENT_FORMAT=legacy"},
		{"unknown", StoreDynamo, "v2", "", "PAYSVC_PAYMENT_FORMAT must be ledger or legacy"},
	} {
		env := map[string]string{"PAYSVC_STORE": tc.store, "PAYSVC_PAYMENT_FORMAT": tc.format}
		c, err := FromEnv(func(k string) string { return env[k] }, StoreEmbedded)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want one saying %q", tc.name, err, tc.err)
		case tc.err == "" && (err != nil || c.PaymentFormat != tc.want):
			t.Errorf("%s: %q, %v; want %q", tc.name, c.PaymentFormat, err, tc.want)
		}
	}
}
