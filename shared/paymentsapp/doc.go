// Package paymentsapp is the app layer of the payment endpoints (sessions,
// payment-methods, payments, payments/details, the modifications and the
// stored-payment-method deletion): it decodes and validates the merchant's
// JSON into the domain's typed inputs in one strict pass (every problem
// named by its field path in one apperr.Invalid error; shared/jsonin) and encodes the
// domain's results as the answers' JSON (docs/openapi.yaml), each
// endpoint's decoder and answer in one file (sessions.go, payments.go,
// modifications.go: captures, reversals, amount updates and refunds); each answer reports its pspReference for
// the request log (PSP). It knows neither the transport (shared/httpapi)
// nor the stores.
package paymentsapp
