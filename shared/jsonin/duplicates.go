package jsonin

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// DuplicateKey reports the path of the first member name given twice in one
// object of raw, a valid JSON document, at any depth (see duplicateKey). For
// decoders of outside bytes that do not go through Parse.
func DuplicateKey(raw []byte) (string, bool) { return duplicateKey(raw) }

// duplicateKey reports the path of the first object member, at any depth,
// whose key appears twice in its object ("amount", "lineItems[1].sku").
// encoding/json and most decoders let the last of duplicates win while
// others take the first, so a document with duplicates means different
// things to the service and to the upstream: it is refused, pass-through
// parts included. raw must be valid JSON. It allocates only for objects of
// more than 16 members and on finding a duplicate.
func duplicateKey(raw []byte) (string, bool) {
	_, path, dup := dupInValue(raw, skipSpace(raw, 0))
	return path, dup
}

// dupInValue scans the value at raw[i] and returns the index after it.
func dupInValue(raw []byte, i int) (int, string, bool) {
	if i >= len(raw) {
		return i, "", false
	}
	switch raw[i] {
	case '{':
		return dupInObject(raw, i)
	case '[':
		return dupInArray(raw, i)
	}
	return skipValue(raw, i), "", false
}

func dupInObject(raw []byte, i int) (int, string, bool) {
	var small [16][]byte
	keys := small[:0]
	var many map[string]bool
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return i + 1, "", false
	}
	for i < len(raw) {
		end := skipString(raw, i)
		key := keyBytes(raw[i:end])
		if seen(key, keys, many) {
			return end, string(key), true
		}
		if many == nil && len(keys) == cap(small) {
			many = make(map[string]bool, 2*len(keys))
			for _, k := range keys {
				many[string(k)] = true
			}
		}
		if many != nil {
			many[string(key)] = true
		} else {
			keys = append(keys, key)
		}
		i = skipSpace(raw, end)
		i = skipSpace(raw, i+1) // ':'
		next, sub, dup := dupInValue(raw, i)
		if dup {
			return next, joinPath(string(key), sub), true
		}
		i = skipSpace(raw, next)
		if i >= len(raw) || raw[i] == '}' {
			return i + 1, "", false
		}
		i = skipSpace(raw, i+1) // ','
	}
	return i, "", false
}

func dupInArray(raw []byte, i int) (int, string, bool) {
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == ']' {
		return i + 1, "", false
	}
	for n := 0; i < len(raw); n++ {
		next, sub, dup := dupInValue(raw, i)
		if dup {
			return next, joinPath("["+strconv.Itoa(n)+"]", sub), true
		}
		i = skipSpace(raw, next)
		if i >= len(raw) || raw[i] == ']' {
			return i + 1, "", false
		}
		i = skipSpace(raw, i+1) // ','
	}
	return i, "", false
}

// keyBytes returns a member name as decoders read it: the token without
// its quotes, or, when it has escapes ("\u0061" is "a") or bytes that are
// not UTF-8 (each read as U+FFFD, so "\xb6" and "\xb2" are one name), its
// decoded form.
func keyBytes(tok []byte) []byte {
	inner := tok[1 : len(tok)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return inner
	}
	var s string
	_ = json.Unmarshal(tok, &s)
	return []byte(s)
}

func seen(key []byte, keys [][]byte, many map[string]bool) bool {
	if many != nil {
		return many[string(key)]
	}
	for _, k := range keys {
		if bytes.Equal(k, key) {
			return true
		}
	}
	return false
}

// joinPath prefixes sub (a member path or an index) with head.
func joinPath(head, sub string) string {
	switch {
	case sub == "":
		return head
	case sub[0] == '[':
		return head + sub
	}
	return head + "." + sub
}
