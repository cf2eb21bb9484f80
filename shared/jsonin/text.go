package jsonin

import (
	"bytes"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// strangeText finds the first text of raw, a valid JSON document, that a
// decoder would not read as it is spelled: a byte that is not UTF-8, or a
// \u escape of half a UTF-16 surrogate pair without its other half
// ("a\ud800b"). encoding/json reads either as U+FFFD, so what is stored
// or sent on would differ from what was sent. It returns the offset and
// what is wrong; it allocates only on finding one.
func strangeText(raw []byte) (at int, msg string, found bool) {
	if !utf8.Valid(raw) {
		at = firstInvalidUTF8(raw)
		return at, fmt.Sprintf("must be UTF-8 text (byte 0x%02X is not)", raw[at]), true
	}
	if at, found = loneSurrogate(raw); found {
		return at, fmt.Sprintf("must not contain %s: half of a UTF-16 surrogate pair alone is no character", raw[at:at+6]), true
	}
	return 0, "", false
}

// firstInvalidUTF8 returns the offset of the first byte of b that does not
// start a valid UTF-8 sequence (len(b) if none).
func firstInvalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// loneSurrogate returns the offset of the first \u escape of raw, a valid
// JSON document, that is a high surrogate not followed by a low one, or a
// low surrogate alone. Valid JSON has backslashes only in strings, each
// starting an escape: scanning escapes in order needs no string boundaries.
func loneSurrogate(raw []byte) (int, bool) {
	i := bytes.IndexByte(raw, '\\')
	for i >= 0 {
		next := i + 2 // after an escape of one character
		if raw[i+1] == 'u' {
			next = i + 6
			switch r := hex4(raw[i+2 : i+6]); {
			case 0xD800 <= r && r < 0xDC00: // high: its low half must follow
				if i+12 > len(raw) || raw[i+6] != '\\' || raw[i+7] != 'u' {
					return i, true
				}
				if lo := hex4(raw[i+8 : i+12]); lo < 0xDC00 || lo >= 0xE000 {
					return i, true
				}
				next = i + 12
			case 0xDC00 <= r && r < 0xE000:
				return i, true
			}
		}
		j := bytes.IndexByte(raw[next:], '\\')
		if j < 0 {
			break
		}
		i = next + j
	}
	return 0, false
}

// hex4 decodes four hex digits (valid JSON has them after \u).
func hex4(b []byte) rune {
	var r rune
	for _, c := range b {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

// pathAt returns the path of the innermost member or element of raw, a
// valid JSON document, that holds the byte at offset off ("" for the
// document itself): a member's name counts as the member.
func pathAt(raw []byte, off int) string {
	return pathIn(raw, skipSpace(raw, 0), off, "")
}

func pathIn(raw []byte, i, off int, path string) string {
	if i >= len(raw) {
		return path
	}
	switch raw[i] {
	case '{':
		i = skipSpace(raw, i+1)
		for i < len(raw) && raw[i] == '"' {
			end := skipString(raw, i)
			child := string(keyBytes(raw[i:end]))
			if path != "" {
				child = path + "." + child
			}
			if off < end {
				return child
			}
			i = skipSpace(raw, skipSpace(raw, end)+1) // past ':'
			vEnd := skipValue(raw, i)
			if off < vEnd {
				return pathIn(raw, i, off, child)
			}
			if i = skipSpace(raw, vEnd); i >= len(raw) || raw[i] != ',' {
				break
			}
			i = skipSpace(raw, i+1)
		}
	case '[':
		i = skipSpace(raw, i+1)
		for n := 0; i < len(raw) && raw[i] != ']'; n++ {
			vEnd := skipValue(raw, i)
			if off < vEnd {
				return pathIn(raw, i, off, path+"["+strconv.Itoa(n)+"]")
			}
			if i = skipSpace(raw, vEnd); i >= len(raw) || raw[i] != ',' {
				break
			}
			i = skipSpace(raw, i+1)
		}
	}
	return path
}
