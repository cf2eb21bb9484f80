package jsonin

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The two classes of text a request carries (docs/security.md). Every
// string is also free of what Parse refuses anywhere: bytes that are not
// UTF-8 and unpaired surrogate escapes.

// Identifier is the rule of identifiers (references, shopperReference,
// ids): they must look like what they are and compare as they look, so
// they refuse control characters (Cc), every invisible format character
// (Cf: zero-width spaces and joiners, bidirectional controls, the byte
// order mark, the soft hyphen, tag characters…) and noncharacters
// (U+FDD0–U+FDEF and the last two code points of every plane); and
// bytes that are not UTF-8 (a path or query value may carry them).
func Identifier(s string) string {
	for i, r := range s {
		switch {
		case r < 0x20 || r == 0x7f:
			return "must not contain control characters"
		case r < 0x80: // the common case: printable ASCII
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			return "must be UTF-8 text"
		case unicode.Is(unicode.Cc, r):
			return "must not contain control characters"
		case unicode.Is(unicode.Cf, r):
			return fmt.Sprintf("must not contain U+%04X, an invisible format character", r)
		case unicode.Is(unicode.Noncharacter_Code_Point, r):
			return fmt.Sprintf("must not contain U+%04X, a noncharacter", r)
		}
	}
	return ""
}

// FreeText is the rule of free text (names, addresses, descriptions, and
// every string of the objects passed through to the upstream): it refuses
// only the bidirectional overrides, embeddings and isolates (U+202A–U+202E,
// U+2066–U+2069), which reorder how the text around them is shown. Other
// format characters are text: a Persian name needs U+200C (zero-width
// non-joiner), an emoji sequence U+200D (zero-width joiner).
func FreeText(s string) string {
	for _, r := range s {
		if isBidiOverride(r) {
			return fmt.Sprintf("must not contain U+%04X, a bidirectional override, embedding or isolate", r)
		}
	}
	return ""
}

// isBidiOverride reports whether r is one of the explicit bidirectional
// embeddings, overrides and isolates or their terminators (LRE, RLE, PDF,
// LRO, RLO, LRI, RLI, FSI, PDI).
func isBidiOverride(r rune) bool {
	return 0x202A <= r && r <= 0x202E || 0x2066 <= r && r <= 0x2069
}

// breach returns the message of the first rule s breaks ("" for none).
func breach(s string, rules []Str) string {
	for _, r := range rules {
		if msg := r(s); msg != "" {
			return msg
		}
	}
	return ""
}

// checkText applies rules to every string value of raw, a value of o's
// document, at any depth, and records each breach at its path below the
// one base returns ("billingAddress.street", "riskData.basket[2].sku").
// A value that passes costs no allocation: paths are made only after a
// first walk found a breach.
func (o *Obj) checkText(raw []byte, base func() string, rules []Str) {
	if len(rules) == 0 {
		return
	}
	if o.doc.eachString(raw, "", false, func(_, s string) bool { return breach(s, rules) == "" }) {
		return
	}
	o.doc.eachString(raw, base(), true, func(path, s string) bool {
		if msg := breach(s, rules); msg != "" {
			o.errs.Add(path, msg)
		}
		return true
	})
}

// eachString calls fn with every string value of raw (a valid JSON value
// of the document) at any depth, decoded, until fn returns false, and
// reports whether it did not. With paths, fn also gets each string's path
// below base (building paths allocates); without, "".
func (d *document) eachString(raw []byte, base string, paths bool, fn func(path, s string) bool) bool {
	i := skipSpace(raw, 0)
	if i >= len(raw) {
		return true
	}
	switch raw[i] {
	case '"':
		s, _ := d.str(raw[i:])
		return fn(base, s)
	case '{':
		return walkObject(raw, func(name []byte, v json.RawMessage) bool {
			p := ""
			if paths {
				p = string(name)
				if base != "" {
					p = base + "." + p
				}
			}
			return d.eachString(v, p, paths, fn)
		})
	case '[':
		n := 0
		return walkArray(raw, func(v json.RawMessage) bool {
			p := ""
			if paths {
				p = base + "[" + strconv.Itoa(n) + "]"
			}
			n++
			return d.eachString(v, p, paths, fn)
		})
	}
	return true
}
