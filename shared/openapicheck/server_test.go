package openapicheck_test

import (
	"net/http"
	"net/http/httptest"
)

func newServer(h http.Handler) *httptest.Server { return httptest.NewServer(h) }
