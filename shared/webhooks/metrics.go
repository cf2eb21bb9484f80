package webhooks

import (
	"encoding/json"
	"io"
	"sync"

	"github.com/yp/paysvc/shared/clock"
)

// EMF writes the dispatcher's metrics to w (the function's stdout) in
// CloudWatch Embedded Metric Format, with the contract template.yaml's
// alarms rely on: namespace PaySvc, one dimension set [Service, Function],
// metrics WebhookDeliveries (every attempt) and WebhookFailures (attempts
// without a 2xx in time), unit Count.
type EMF struct {
	mu       sync.Mutex
	w        io.Writer
	function string
	clock    clock.Clock
}

// NewEMF returns an EMF writer; function is $AWS_LAMBDA_FUNCTION_NAME.
func NewEMF(w io.Writer, function string, clk clock.Clock) *EMF {
	return &EMF{w: w, function: function, clock: clk}
}

// Attempt writes one record for one attempt.
func (m *EMF) Attempt(delivered bool) {
	failures := 1
	if delivered {
		failures = 0
	}
	type metric struct {
		Name string `json:"Name"`
		Unit string `json:"Unit"`
	}
	rec := map[string]any{
		"_aws": map[string]any{
			"Timestamp": m.clock.Now().UnixMilli(),
			"CloudWatchMetrics": []any{map[string]any{
				"Namespace":  "PaySvc",
				"Dimensions": [][]string{{"Service", "Function"}},
				"Metrics":    []metric{{"WebhookDeliveries", "Count"}, {"WebhookFailures", "Count"}},
			}},
		},
		"Service":           "paysvc",
		"Function":          m.function,
		"WebhookDeliveries": 1,
		"WebhookFailures":   failures,
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	_, _ = m.w.Write(append(b, '\n'))
}
