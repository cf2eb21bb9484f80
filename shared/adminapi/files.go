package adminapi

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Files the running local server keeps in its data directory while it
// serves, so paysvc-admin finds it and its admin API.
const (
	TokenFile   = "admin-token" // the admin API's bearer token (0600)
	ServerFile  = "admin.json"  // where the server listens: Endpoint
	tokenLength = 32            // random bytes
)

// Endpoint is where a running local server is: its base URL (the admin
// API is under Prefix) and its process.
type Endpoint struct {
	URL   string `json:"url"`
	PID   int    `json:"pid"`
	Token string `json:"-"` // from TokenFile
}

// NewToken returns a random bearer token.
func NewToken() string {
	b := make([]byte, tokenLength)
	_, _ = rand.Read(b) // never fails (crypto/rand, Go 1.24+)
	return "adm_" + hex.EncodeToString(b)
}

// WriteFiles records e (and its token) in dataDir, readable by this user
// only. The token is written first: a reader that finds ServerFile finds
// the token.
func WriteFiles(dataDir string, e Endpoint) error {
	if err := writePrivate(filepath.Join(dataDir, TokenFile), []byte(e.Token+"\n")); err != nil {
		return err
	}
	b, _ := json.Marshal(e) // a plain struct: cannot fail
	return writePrivate(filepath.Join(dataDir, ServerFile), append(b, '\n'))
}

// RemoveFiles removes what WriteFiles wrote.
func RemoveFiles(dataDir string) {
	_ = os.Remove(filepath.Join(dataDir, ServerFile))
	_ = os.Remove(filepath.Join(dataDir, TokenFile))
}

// ReadFiles returns the endpoint recorded in dataDir; ok is false when no
// server recorded one (it may have stopped without removing it: callers
// ask it, Client.Status).
func ReadFiles(dataDir string) (e Endpoint, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(dataDir, ServerFile))
	if errors.Is(err, fs.ErrNotExist) {
		return Endpoint{}, false, nil
	}
	if err != nil {
		return Endpoint{}, false, err
	}
	if err := json.Unmarshal(b, &e); err != nil || e.URL == "" {
		return Endpoint{}, false, fmt.Errorf("%s: not a local server's record (%v)", filepath.Join(dataDir, ServerFile), err)
	}
	tok, err := os.ReadFile(filepath.Join(dataDir, TokenFile))
	if err != nil {
		return Endpoint{}, false, fmt.Errorf("the local server's admin token: %w", err)
	}
	e.Token = strings.TrimSpace(string(tok))
	return e, true, nil
}

// writePrivate writes path afresh with mode 0600 (a file left by an
// earlier run is removed first, so its mode does not carry over).
func writePrivate(path string, b []byte) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}
