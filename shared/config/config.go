// Package config reads the service's configuration from the environment.
// Every variable is documented in docs/configuration.md; upstream secrets
// come from Secrets Manager in AWS (PAYSVC_UPSTREAM_SECRET_ARN) and from
// plain variables only for local runs.
package config

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/yp/paysvc/shared/tenant"
)

// Store adapters.
const (
	StoreEmbedded = "embedded"
	StoreDynamo   = "dynamo"
)

// Config is the whole configuration.
type Config struct {
	Environment tenant.Environment // PAYSVC_ENVIRONMENT: test (default) or live
	Store       string             // PAYSVC_STORE: embedded or dynamo
	DataDir     string             // PAYSVC_DATA_DIR: embedded store directory (default .paysvc)
	Table       string             // PAYSVC_TABLE: DynamoDB table (default paysvc)
	// AWSEndpoint (AWS_ENDPOINT_URL) points the AWS SDK at moto or LocalStack.
	AWSEndpoint string

	UpstreamURL       string        // PAYSVC_UPSTREAM_URL: checkout API base, e.g. https://checkout-test.adyen.com/v71
	UpstreamSecretARN string        // PAYSVC_UPSTREAM_SECRET_ARN: Secrets Manager secret (AWS)
	UpstreamTimeout   time.Duration // PAYSVC_UPSTREAM_TIMEOUT (default 20s)
	Secrets           Secrets       // local only: PAYSVC_UPSTREAM_API_KEY, PAYSVC_UPSTREAM_HMAC_KEY, ...

	QueueURL string // PAYSVC_QUEUE_URL: SQS deliveries queue
	DLQURL   string // PAYSVC_DLQ_URL: SQS dead-letter queue
	// WebhookAllowLocal (PAYSVC_WEBHOOK_ALLOW_LOCAL=true) lets webhooks go
	// to http(s) targets on localhost/127.0.0.1, any port: development
	// only, refused in the live environment, logged as a warning.
	WebhookAllowLocal bool

	LogLevel      slog.Level    // PAYSVC_LOG_LEVEL: debug, info (default), warn, error
	RatePerSecond int           // PAYSVC_RATE_PER_SECOND (default 100)
	RateBurst     int           // PAYSVC_RATE_BURST (default 200)
	AuthCacheTTL  time.Duration // PAYSVC_AUTH_CACHE_TTL (default 5s; 0 disables)
	// ExpiryNoticeLead (PAYSVC_EXPIRY_NOTICE, default 24h, 1h to 27 days) is
	// how long before an uncaptured authorisation expires its merchant gets
	// the paysvc.authorisation.expiring service event (docs/expiry.md).
	ExpiryNoticeLead time.Duration

	Addr     string // PAYSVC_ADDR: local server address (default 127.0.0.1:3000)
	SeedFile string // PAYSVC_SEED_FILE: local seed file
}

// Secrets are the upstream credentials. Never log them.
type Secrets struct {
	APIKey               string `json:"apiKey"`
	HMACKey              string `json:"hmacKey"`
	NotificationUsername string `json:"notificationUsername,omitempty"`
	NotificationPassword string `json:"notificationPassword,omitempty"`
}

// String hides the values.
func (Secrets) String() string { return "Secrets{redacted}" }

// LogValue hides the values from slog.
func (Secrets) LogValue() slog.Value { return slog.StringValue("redacted") }

// FromEnv reads the configuration; defaultStore is the adapter used when
// PAYSVC_STORE is unset (embedded locally, dynamo in Lambda).
func FromEnv(getenv func(string) string, defaultStore string) (Config, error) {
	c := Config{
		Environment:       tenant.Environment(or(getenv("PAYSVC_ENVIRONMENT"), "test")),
		Store:             or(getenv("PAYSVC_STORE"), defaultStore),
		DataDir:           or(getenv("PAYSVC_DATA_DIR"), ".paysvc"),
		Table:             or(getenv("PAYSVC_TABLE"), "paysvc"),
		AWSEndpoint:       getenv("AWS_ENDPOINT_URL"),
		UpstreamURL:       strings.TrimRight(getenv("PAYSVC_UPSTREAM_URL"), "/"),
		UpstreamSecretARN: getenv("PAYSVC_UPSTREAM_SECRET_ARN"),
		Secrets: Secrets{
			APIKey:               getenv("PAYSVC_UPSTREAM_API_KEY"),
			HMACKey:              getenv("PAYSVC_UPSTREAM_HMAC_KEY"),
			NotificationUsername: getenv("PAYSVC_NOTIFICATION_USERNAME"),
			NotificationPassword: getenv("PAYSVC_NOTIFICATION_PASSWORD"),
		},
		QueueURL: getenv("PAYSVC_QUEUE_URL"),
		DLQURL:   getenv("PAYSVC_DLQ_URL"),

		Addr:     or(getenv("PAYSVC_ADDR"), "127.0.0.1:3000"),
		SeedFile: getenv("PAYSVC_SEED_FILE"),
	}
	var err error
	if c.Environment != tenant.EnvTest && c.Environment != tenant.EnvLive {
		return c, fmt.Errorf("PAYSVC_ENVIRONMENT must be test or live, not %q", c.Environment)
	}
	if c.Store != StoreEmbedded && c.Store != StoreDynamo {
		return c, fmt.Errorf("PAYSVC_STORE must be embedded or dynamo, not %q", c.Store)
	}
	if c.WebhookAllowLocal, err = boolean(getenv, "PAYSVC_WEBHOOK_ALLOW_LOCAL"); err != nil {
		return c, err
	}
	if c.WebhookAllowLocal && c.Environment == tenant.EnvLive {
		return c, fmt.Errorf("PAYSVC_WEBHOOK_ALLOW_LOCAL is a development setting and cannot be used in the live environment")
	}
	if c.UpstreamTimeout, err = duration(getenv, "PAYSVC_UPSTREAM_TIMEOUT", 20*time.Second); err != nil {
		return c, err
	}
	if c.AuthCacheTTL, err = duration(getenv, "PAYSVC_AUTH_CACHE_TTL", 5*time.Second); err != nil {
		return c, err
	}
	if c.ExpiryNoticeLead, err = duration(getenv, "PAYSVC_EXPIRY_NOTICE", 24*time.Hour); err != nil {
		return c, err
	}
	if c.ExpiryNoticeLead < time.Hour || c.ExpiryNoticeLead > 27*24*time.Hour {
		return c, fmt.Errorf("PAYSVC_EXPIRY_NOTICE must be between 1h and 648h (27 days), not %s", c.ExpiryNoticeLead)
	}
	if c.RatePerSecond, err = integer(getenv, "PAYSVC_RATE_PER_SECOND", 100); err != nil {
		return c, err
	}
	if c.RateBurst, err = integer(getenv, "PAYSVC_RATE_BURST", 200); err != nil {
		return c, err
	}
	if err := c.LogLevel.UnmarshalText([]byte(or(getenv("PAYSVC_LOG_LEVEL"), "info"))); err != nil {
		return c, fmt.Errorf("PAYSVC_LOG_LEVEL: %w", err)
	}
	return c, nil
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func duration(getenv func(string) string, name string, def time.Duration) (time.Duration, error) {
	v := getenv(name)
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%s must be a duration such as 20s, not %q", name, v)
	}
	return d, nil
}

func integer(getenv func(string) string, name string, def int) (int, error) {
	v := getenv(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%s must be a positive integer, not %q", name, v)
	}
	return n, nil
}

func boolean(getenv func(string) string, name string) (bool, error) {
	switch v := getenv(name); v {
	case "", "false", "0":
		return false, nil
	case "true", "1":
		return true, nil
	default:
		return false, fmt.Errorf("%s must be true or false, not %q", name, v)
	}
}
