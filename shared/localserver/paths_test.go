package localserver

import (
	"net/http"
	"testing"
)

// Through the whole local server (simulator hooks, the contract, the
// notifications endpoint, the API), unclean paths get the API's JSON 404
// with X-Request-Id, never a redirect; the contract is served as is.
func TestLocalServerUncleanPathsAndContract(t *testing.T) {
	s := start(t, map[string]string{"PAYSVC_SEED_FILE": exampleSeed})
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, p := range []string{"/v1/ecom//config", "/v1/ecom/../ecom/config", "//openapi.yaml", "/v1/notifications//upstream", "/openapi.yaml/.."} {
		req, err := http.NewRequest("GET", s.base+p, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+exampleKey)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 404 || resp.Header.Get("X-Request-Id") == "" || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("GET %s: %d %v, want the JSON 404", p, resp.StatusCode, resp.Header)
		}
	}
	resp, err := client.Get(s.base + OpenAPIPath)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/yaml" {
		t.Errorf("GET %s: %d %v", OpenAPIPath, resp.StatusCode, resp.Header)
	}
	if code, _ := s.do(t, "POST", OpenAPIPath, nil, "{}"); code == 200 {
		t.Errorf("POST %s served the contract", OpenAPIPath)
	}
}
