package lambdaapi

import (
	"context"
	"net/http"
	"reflect"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

// A header sent twice reaches the handler twice, whichever way API Gateway
// carries it: multiValueHeaders (the REST proxy event; headers then holds
// only the last value) wins over headers; a headers map alone can still
// name one header twice in two spellings. The service's one-value rule
// (httpapi) depends on seeing every value.
func TestRepeatedHeadersReachTheHandler(t *testing.T) {
	tests := []struct {
		name   string
		single map[string]string
		multi  map[string][]string
		want   []string // Authorization's values as the handler sees them
	}{
		{"multiValueHeaders", map[string]string{"Authorization": "Bearer a"},
			map[string][]string{"Authorization": {"Bearer b", "Bearer a"}}, []string{"Bearer b", "Bearer a"}},
		{"spellings in multiValueHeaders", nil,
			map[string][]string{"Authorization": {"Bearer b"}, "authorization": {"Bearer a"}}, nil},
		{"spellings in headers", map[string]string{"Authorization": "Bearer b", "authorization": "Bearer a"}, nil, nil},
		{"once", map[string]string{"Authorization": "Bearer a"},
			map[string][]string{"Authorization": {"Bearer a"}}, []string{"Bearer a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			h := Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got = r.Header.Values("Authorization")
				w.WriteHeader(http.StatusNoContent)
			}))
			resp, err := h(context.Background(), events.APIGatewayProxyRequest{
				HTTPMethod: http.MethodGet, Path: "/v1/ecom/config", Headers: tt.single, MultiValueHeaders: tt.multi,
				RequestContext: events.APIGatewayProxyRequestContext{RequestID: "req-1"},
			})
			if err != nil || resp.StatusCode != http.StatusNoContent {
				t.Fatalf("%v %+v", err, resp)
			}
			if tt.want == nil { // two values, in map order
				if len(got) != 2 {
					t.Fatalf("Authorization %q, want both values", got)
				}
				return
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Authorization %q, want %q", got, tt.want)
			}
		})
	}
}
