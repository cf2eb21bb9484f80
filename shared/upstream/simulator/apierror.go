package simulator

import (
	"encoding/json"
	"net/http"
)

// apiError is an upstream error answer: {status, errorCode, message,
// errorType, pspReference}.
type apiError struct {
	Status       int    `json:"status"`
	ErrorCode    string `json:"errorCode"`
	Message      string `json:"message"`
	ErrorType    string `json:"errorType"`
	PSPReference string `json:"pspReference,omitempty"`
}

func (e *apiError) Error() string { return e.ErrorCode + " " + e.Message }

// Error codes the simulator answers with. Where the upstream's documented
// code is known it is used; otherwise the generic "000" carries a precise
// message (README.md lists them).
const (
	codeGeneric         = "000"
	codeMissingAmount   = "100"
	codeInvalidCard     = "101"
	codeCVCLength       = "103"
	codeExpiryInvalid   = "129"
	codeMissingRef      = "130"
	codeInvalidAmount   = "137"
	codeBadCurrency     = "138"
	codeUnknownPSP      = "167"
	codeDecrypt         = "174"
	codeMetadata        = "177"
	codeJSON            = "702"
	codeInFlight        = "704"
	codeContractMissing = "800"
	codeMerchant        = "901"
	codeUnsupportedPM   = "905"
	codeInvalidPayload  = "14_018"
	codeReturnURL       = "14_030"
)

func validationError(code, msg string) *apiError {
	return &apiError{Status: http.StatusUnprocessableEntity, ErrorCode: code, Message: msg, ErrorType: "validation"}
}

func errUnknownPSP(psp string) *apiError {
	e := validationError(codeUnknownPSP, "Original pspReference required for this operation")
	e.PSPReference = psp
	return e
}

func errUnauthorized() *apiError {
	return &apiError{Status: http.StatusUnauthorized, ErrorCode: codeGeneric, Message: "HTTP Status Response - Unauthorized", ErrorType: "security"}
}

func errInFlight() *apiError {
	return &apiError{Status: http.StatusConflict, ErrorCode: codeInFlight, Message: "request already processed or in progress", ErrorType: "validation"}
}

func errParse(msg string) *apiError {
	return &apiError{Status: http.StatusBadRequest, ErrorCode: codeJSON, Message: "Unexpected input: " + msg, ErrorType: "validation"}
}

func errInternal() *apiError {
	return &apiError{Status: http.StatusInternalServerError, ErrorCode: codeGeneric, Message: "Internal error (simulated)", ErrorType: "internal"}
}

func errNotFound() *apiError {
	return &apiError{Status: http.StatusNotFound, ErrorCode: codeGeneric, Message: "Not Found", ErrorType: "validation"}
}

// result is a complete answer: status and JSON body.
type result struct {
	status int
	body   []byte
}

func jsonResult(status int, v any) result {
	b, err := json.Marshal(v)
	if err != nil {
		return errorResult(errInternal())
	}
	return result{status: status, body: b}
}

func errorResult(e *apiError) result { return jsonResult(e.Status, e) }
