package dynamo

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
)

// writeToken returns a new random token for attrWriteToken.
func writeToken() string {
	var b [writeTokenBytes]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// writeTokenBytes is a write token's randomness (hex: twice as many
// characters).
const writeTokenBytes = 12

// writeTokenPlaceholder is a token's length of zeros: the item builders'
// value (its size is what the capacity model counts).
var writeTokenPlaceholder = strings.Repeat("0", 2*writeTokenBytes)
