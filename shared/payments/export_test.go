package payments

// What the package's external tests name that the package does not export.

// ApplyNotification is applyNotification.
var ApplyNotification = applyNotification

// The notification event codes the tests' items carry.
const (
	EventAuthorisation           = eventAuthorisation
	EventCapture                 = eventCapture
	EventCaptureFailed           = eventCaptureFailed
	EventRefund                  = eventRefund
	EventRefundFailed            = eventRefundFailed
	EventOfferClosed             = eventOfferClosed
	EventAuthorisationAdjustment = eventAuthorisationAdjustment
	EventCancelOrRefund          = eventCancelOrRefund
	EventCancellation            = "CANCELLATION"
	StateIdentifyShopper         = stateIdentifyShopper
)
