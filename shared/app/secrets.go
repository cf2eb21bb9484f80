package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/yp/paysvc/shared/config"
)

// SecretsManagerSource reads the upstream secret arn (JSON {"apiKey",
// "hmacKey", "notificationUsername", "notificationPassword"}, apiKey
// required) from Secrets Manager at each call. Errors never hold the value.
// written, when not nil, is told at each read when the current value was
// written (its version's creation): the age the rotation policy's alarm
// watches (docs/runbook.md, upstream-secret-age).
func SecretsManagerSource(client *secretsmanager.Client, arn string, written func(time.Time)) func(context.Context) (config.Secrets, error) {
	return func(ctx context.Context) (config.Secrets, error) {
		out, err := client.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: &arn})
		if err != nil {
			return config.Secrets{}, fmt.Errorf("read upstream secret: %w", err)
		}
		if written != nil && out.CreatedDate != nil {
			written(*out.CreatedDate)
		}
		if out.SecretString == nil {
			return config.Secrets{}, errors.New("upstream secret has no SecretString")
		}
		var s config.Secrets
		if err := json.Unmarshal([]byte(*out.SecretString), &s); err != nil {
			return config.Secrets{}, errors.New("upstream secret is not the JSON object {apiKey, hmacKey, ...}")
		}
		if s.APIKey == "" {
			return config.Secrets{}, errors.New("upstream secret lacks apiKey")
		}
		return s, nil
	}
}

// upstreamKeyTransport sets the current upstream API key (X-API-Key) on
// every upstream call, so a rotated key is used without a restart. A 401
// answer schedules an early read of the secret (SecretCache.Refresh): the
// key in use was refused, perhaps already replaced.
type upstreamKeyTransport struct {
	cache *SecretCache
	next  http.RoundTripper
}

func (t upstreamKeyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	s, _, err := t.cache.Get(r.Context())
	if err != nil {
		if r.Body != nil {
			_ = r.Body.Close()
		}
		return nil, err
	}
	r = r.Clone(r.Context()) // a RoundTripper must not modify the caller's request
	r.Header.Set("X-API-Key", s.APIKey)
	resp, err := t.next.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusUnauthorized && t.cache.Refresh() {
		t.cache.log.WarnContext(r.Context(), "upstream answered 401: the upstream secret is read again before the next call")
	}
	return resp, err
}
