package testenv

import "github.com/yp/paysvc/internal/bodies"

// Typical request bodies (internal/bodies); %s is the reference.
const (
	PaymentBodyFmt = bodies.PaymentBodyFmt
	SessionBodyFmt = bodies.SessionBodyFmt
)

// PaymentBody returns PaymentBodyFmt with reference ref.
func PaymentBody(ref string) string { return bodies.PaymentBody(ref) }

// SessionBody returns SessionBodyFmt with reference ref.
func SessionBody(ref string) string { return bodies.SessionBody(ref) }
