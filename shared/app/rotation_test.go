package app

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/config"
	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/testutil/moto"
	"github.com/yp/paysvc/shared/upstream"
)

func TestMain(m *testing.M) { os.Exit(moto.Run(m)) }

// onMoto points the AWS SDK's environment (endpoint, region, credentials)
// at the test moto for t and returns its endpoint.
func onMoto(t *testing.T) string {
	endpoint := moto.Endpoint(t)
	for k, v := range map[string]string{"AWS_ENDPOINT_URL": endpoint, "AWS_REGION": moto.Region,
		"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"} {
		t.Setenv(k, v)
	}
	return endpoint
}

// Upstream secret values of the rotation test (hex HMAC keys as the
// upstream shows them).
const (
	hmacOld = "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056"
	hmacNew = "0A1B2C3D4E5F60718293A4B5C6D7E8F90A1B2C3D4E5F60718293A4B5C6D7E8F9"
)

func secretJSON(t *testing.T, apiKey, hmacKey, password string) string {
	t.Helper()
	b, err := json.Marshal(map[string]string{"apiKey": apiKey, "hmacKey": hmacKey,
		"notificationUsername": "paysvc-notify", "notificationPassword": password})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRotatedSecretIsUsedWithoutRestart: the upstream secret lives in
// Secrets Manager (moto) and is rotated while the App runs. The upstream
// API key, the notification HMAC key and the basic-auth password in use
// follow without a new App: after the TTL, or at once after a refusal.
func TestRotatedSecretIsUsedWithoutRestart(t *testing.T) {
	ctx := context.Background()
	endpoint := onMoto(t)
	sm := secretsmanager.NewFromConfig(aws.Config{Region: moto.Region, BaseEndpoint: aws.String(endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
	created, err := sm.CreateSecret(ctx, &secretsmanager.CreateSecretInput{
		Name: aws.String("paysvc/rotation/" + moto.TableName(t)), SecretString: aws.String(secretJSON(t, "key-1", hmacOld, "pw-1")),
	})
	if err != nil {
		t.Fatalf("CreateSecret: %v", err)
	}
	t.Cleanup(func() {
		_, _ = sm.DeleteSecret(context.Background(), &secretsmanager.DeleteSecretInput{SecretId: created.ARN, ForceDeleteWithoutRecovery: aws.Bool(true)})
	})
	rotate := func(apiKey, hmacKey, password string) {
		t.Helper()
		if _, err := sm.PutSecretValue(ctx, &secretsmanager.PutSecretValueInput{
			SecretId: created.ARN, SecretString: aws.String(secretJSON(t, apiKey, hmacKey, password)),
		}); err != nil {
			t.Fatalf("PutSecretValue: %v", err)
		}
	}

	// The upstream: accepts only the key it is told to, records what it got.
	var mu sync.Mutex
	accept, gotKey := "key-1", ""
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		gotKey = r.Header.Get("X-API-Key")
		if gotKey != accept {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer up.Close()

	env := map[string]string{"PAYSVC_DATA_DIR": t.TempDir(), "PAYSVC_UPSTREAM_URL": up.URL,
		"PAYSVC_UPSTREAM_SECRET_ARN": aws.ToString(created.ARN)}
	cfg, err := config.FromEnv(func(k string) string { return env[k] }, config.StoreEmbedded)
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(time.Date(2026, 11, 24, 3, 0, 0, 0, time.UTC))
	var logs bytes.Buffer
	a, err := New(ctx, cfg, NewLogger(&logs, slog.LevelDebug), clk)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Stores.Close()
	client := a.upstreamHTTPClient()
	call := func(acceptKey string) (sent string, status int) {
		t.Helper()
		mu.Lock()
		accept = acceptKey
		mu.Unlock()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, up.URL+"/v71/payments", strings.NewReader("{}"))
		req.Header.Set("X-API-Key", "cold-start-value")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("upstream call: %v", err)
		}
		_ = resp.Body.Close()
		mu.Lock()
		defer mu.Unlock()
		return gotKey, resp.StatusCode
	}
	notifications, err := NotificationsHandler(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	notify := func(hmacKey, password string) int {
		t.Helper()
		item := upstream.NotificationRequestItem{
			EventCode: "AUTHORISATION", Success: "true", PSPReference: "ROTATION0000001", MerchantReference: "order-rot",
			MerchantAccountCode: "DemoShopECOM", EventDate: "2026-11-24T03:00:00+01:00",
			Amount: money.Amount{Value: 1000, Currency: "EUR"},
		}
		sig, err := upstream.SignItem(hmacKey, item)
		if err != nil {
			t.Fatal(err)
		}
		item.AdditionalData = map[string]string{upstream.KeyHMACSignature: sig}
		body, _ := json.Marshal(upstream.Notification{Live: "false", NotificationItems: []upstream.NotificationItem{{Item: item}}})
		req := httptest.NewRequest(http.MethodPost, "/v1/notifications/upstream", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.SetBasicAuth("paysvc-notify", password)
		w := httptest.NewRecorder()
		notifications.ServeHTTP(w, req)
		return w.Code
	}

	// Before any rotation.
	if sent, status := call("key-1"); sent != "key-1" || status != http.StatusOK {
		t.Fatalf("first call sent %q (%d), want key-1", sent, status)
	}
	if code := notify(hmacOld, "pw-1"); code != http.StatusOK {
		t.Fatalf("notification signed with the current key: %d", code)
	}

	// Rotation 1, everything at once. Within the TTL the old values are
	// still in use (nothing refused them yet); after it, the new ones.
	rotate("key-2", hmacNew, "pw-2")
	clk.Advance(SecretTTL - time.Second)
	if sent, _ := call("key-1"); sent != "key-1" {
		t.Errorf("within the TTL: sent %q, want the cached key-1", sent)
	}
	clk.Advance(time.Second)
	if sent, status := call("key-2"); sent != "key-2" || status != http.StatusOK {
		t.Errorf("after the TTL: sent %q (%d), want key-2", sent, status)
	}
	if code := notify(hmacNew, "pw-2"); code != http.StatusOK {
		t.Errorf("notification signed with the rotated HMAC key after the TTL: %d, want 200", code)
	}
	if code := notify(hmacOld, "pw-2"); code != http.StatusUnauthorized {
		t.Errorf("notification signed with the replaced HMAC key: %d, want 401", code)
	}

	// Rotation 2, found by a refusal: the upstream refuses key-2, so the
	// next call reads the secret again without waiting for the TTL.
	rotate("key-3", hmacOld, "pw-3")
	clk.Advance(SecretMinRefresh)
	if sent, status := call("key-3"); sent != "key-2" || status != http.StatusUnauthorized {
		t.Errorf("refused call: sent %q (%d), want key-2 refused", sent, status)
	}
	if sent, status := call("key-3"); sent != "key-3" || status != http.StatusOK {
		t.Errorf("after the refusal: sent %q (%d), want key-3", sent, status)
	}
	// The notifications side, after a refusal of its own.
	rotate("key-3", hmacNew, "pw-4")
	clk.Advance(SecretMinRefresh)
	if code := notify(hmacNew, "pw-4"); code != http.StatusUnauthorized {
		t.Errorf("first notification with the new password: %d, want 401 (cached secret)", code)
	}
	if code := notify(hmacNew, "pw-4"); code != http.StatusOK {
		t.Errorf("the upstream's retry after the refusal: %d, want 200 (secret read again)", code)
	}

	for _, secret := range []string{"key-1", "key-2", "key-3", "pw-1", "pw-2", "pw-4", hmacOld, hmacNew} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("a secret value is in the logs: %s", secret)
		}
	}
	if !strings.Contains(logs.String(), "upstream secret: a new value is in use") {
		t.Errorf("rotation not logged: %s", logs.String())
	}
}
