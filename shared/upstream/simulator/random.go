package simulator

import (
	"crypto/rand"
	"encoding/hex"
	"io"
	"sync"
)

// refAlphabet has 32 symbols, so one random byte gives one symbol without bias.
const refAlphabet = "0123456789ABCDEFGHJKLMNPQRSTVWXZ"

// ids draws references from an injectable random source.
type ids struct {
	mu  sync.Mutex
	src io.Reader
}

func newIDs(src io.Reader) *ids {
	if src == nil {
		src = rand.Reader
	}
	return &ids{src: src}
}

func (g *ids) read(n int) []byte {
	b := make([]byte, n)
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, err := io.ReadFull(g.src, b); err != nil {
		// An exhausted test reader falls back to the system source rather
		// than producing colliding references.
		g.src = rand.Reader
		_, _ = io.ReadFull(g.src, b)
	}
	return b
}

// ref returns an n-character upper-case alphanumeric reference.
func (g *ids) ref(n int) string {
	b := g.read(n)
	for i := range b {
		b[i] = refAlphabet[b[i]&31]
	}
	return string(b)
}

// psp returns a 16-character pspReference.
func (g *ids) psp() string { return g.ref(16) }

// hex returns 2n hexadecimal characters.
func (g *ids) hex(n int) string { return hex.EncodeToString(g.read(n)) }
