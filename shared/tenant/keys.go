package tenant

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
)

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// KeyPrefix returns the API key prefix of an environment: yp_test_ or yp_live_.
func KeyPrefix(env Environment) string { return "yp_" + string(env) + "_" }

// EnvironmentOfKey returns the environment a key's prefix claims, or "".
func EnvironmentOfKey(key string) Environment {
	switch {
	case strings.HasPrefix(key, "yp_test_"):
		return EnvTest
	case strings.HasPrefix(key, "yp_live_"):
		return EnvLive
	}
	return ""
}

// HashKey returns the hex SHA-256 under which a key is stored.
func HashKey(key string) string {
	var room [256]byte // on the stack: []byte(key) of a key over 32 bytes allocates
	var sum [sha256.Size]byte
	if len(key) <= len(room) {
		sum = sha256.Sum256(append(room[:0], key...))
	} else {
		sum = sha256.Sum256([]byte(key))
	}
	var out [2 * sha256.Size]byte
	hex.Encode(out[:], sum[:])
	return string(out[:])
}

// KeyHint returns what may be shown of a key: its prefix and last 4 characters.
func KeyHint(key string) string {
	if len(key) < 12 {
		return "****"
	}
	return key[:8] + "…" + key[len(key)-4:]
}

// randomBase62 returns n base62 characters from crypto/rand (rejection
// sampling, so every character is uniform).
func randomBase62(n int) (string, error) {
	out := make([]byte, 0, n)
	buf := make([]byte, n+n/2)
	for len(out) < n {
		if _, err := rand.Read(buf); err != nil {
			return "", fmt.Errorf("random: %w", err)
		}
		for _, b := range buf {
			if b < 248 { // 248 = 4*62: keep the distribution uniform
				out = append(out, base62[b%62])
				if len(out) == n {
					break
				}
			}
		}
	}
	return string(out), nil
}

// NewKeySecret returns a fresh API key for env: prefix + 43 base62 characters
// (≈ 256 bits, i.e. ≥ 32 random bytes).
func NewKeySecret(env Environment) (string, error) {
	s, err := randomBase62(43)
	if err != nil {
		return "", err
	}
	return KeyPrefix(env) + s, nil
}

// NewID returns a random identifier with a prefix, e.g. NewID("key_").
func NewID(prefix string) (string, error) {
	s, err := randomBase62(20)
	if err != nil {
		return "", err
	}
	return prefix + s, nil
}

// NewWebhookSecret returns a Standard Webhooks secret: whsec_ + base64 of 32 random bytes.
func NewWebhookSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random: %w", err)
	}
	return "whsec_" + base64.StdEncoding.EncodeToString(b), nil
}
