package paymentsapp

import (
	"strings"
	"testing"

	"github.com/yp/paysvc/shared/apperr"
)

// TestCaptureModeSetByTheService: the service states the merchant's
// capture mode upstream, so a merchant's captureDelayHours or
// additionalData.manualCapture (any letter case) is refused.
func TestCaptureModeSetByTheService(t *testing.T) {
	const pay = `"amount":{"value":100,"currency":"EUR"},"returnUrl":"https://shop.example/r","paymentMethod":{"type":"scheme"}`
	const ses = `"amount":{"value":100,"currency":"EUR"},"returnUrl":"https://shop.example/r"`
	for _, tc := range []struct {
		name, body, field string
		decode            func([]byte) error
	}{
		{"payment delay", `{` + pay + `,"captureDelayHours":0}`, "captureDelayHours", decodePayment},
		{"payment manualCapture", `{` + pay + `,"additionalData":{"manualCapture":"true"}}`, "additionalData", decodePayment},
		{"payment ManualCapture", `{` + pay + `,"additionalData":{"ManualCapture":"false"}}`, "additionalData", decodePayment},
		{"session delay", `{` + ses + `,"captureDelayHours":2}`, "captureDelayHours", decodeSession},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := apperr.As(tc.decode([]byte(tc.body)))
			if e == nil || e.Kind != apperr.Invalid || len(e.Fields) != 1 || !strings.HasPrefix(e.Fields[0].Field, tc.field) ||
				!strings.Contains(e.Fields[0].Message, "set by the service") {
				t.Fatalf("%s: %v, want 400 naming %s as set by the service", tc.body, e, tc.field)
			}
		})
	}
}

func decodePayment(b []byte) error { _, err := DecodePayment(b); return err }
func decodeSession(b []byte) error { _, err := DecodeSession(b); return err }
