package app

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/aws/smithy-go/logging"
)

// The AWS SDK's own warnings are JSON log lines like every other.
func TestSDKLoggerWritesJSON(t *testing.T) {
	var buf bytes.Buffer
	sdkLogger{NewLogger(&buf, slog.LevelInfo)}.Logf(logging.Warn, "failed to close HTTP response body: %s", "checksum")
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("not JSON: %q", buf.String())
	}
	if line["level"] != "WARN" || line["msg"] != "aws sdk" || line["detail"] != "failed to close HTTP response body: checksum" {
		t.Fatalf("line %v", line)
	}
}
