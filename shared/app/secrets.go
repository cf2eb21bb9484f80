package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/yp/paysvc/shared/config"
)

// LoadSecrets returns the upstream secrets: from Secrets Manager when
// PAYSVC_UPSTREAM_SECRET_ARN is set (read once, at cold start), else from
// the local environment variables.
func LoadSecrets(ctx context.Context, cfg config.Config) (config.Secrets, error) {
	if cfg.UpstreamSecretARN == "" {
		return cfg.Secrets, nil
	}
	ac, err := AWSConfig(ctx)
	if err != nil {
		return config.Secrets{}, err
	}
	out, err := secretsmanager.NewFromConfig(ac).GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{
		SecretId: &cfg.UpstreamSecretARN,
	})
	if err != nil {
		return config.Secrets{}, fmt.Errorf("read upstream secret: %w", err)
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
