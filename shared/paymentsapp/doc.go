// Package paymentsapp is the app layer of the payment endpoints (sessions,
// payment-methods, payments, payments/details, the modifications and the
// stored-payment-method deletion): it decodes and validates the merchant's
// JSON into the domain's typed inputs in one strict pass (every problem
// named by its field path in one 400 yp_2002; shared/jsonin) and encodes the
// domain's results as the answers' JSON (docs/openapi.yaml). It knows
// neither the transport (shared/httpapi) nor the stores.
package paymentsapp
