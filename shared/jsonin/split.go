package jsonin

import (
	"bytes"
	"encoding/json"
)

// The splitters below take apart an object or array of a document that has
// already been validated as UTF-8 JSON (Parse checks the whole body once),
// so they only find boundaries: no reflection, no second validation.

// member is one member of an object: its name as raw bytes (unescaped;
// made a string only for an error message, so reading a body allocates no
// string per name), its value, and whether a reader asked for it.
type member struct {
	name []byte
	raw  json.RawMessage
	used bool
}

// splitObject returns the members of the object raw, in order, appended
// to m (nil: a new slice). Of duplicate names the last value wins, as
// with encoding/json (Parse refuses duplicates before; the splitter does
// not rely on it). ok is false when raw is not an object.
func splitObject(raw []byte, m []member) ([]member, bool) {
	ok := walkObject(raw, func(name []byte, v json.RawMessage) bool {
		m = setMember(m, name, v)
		return true
	})
	if !ok {
		return nil, false
	}
	return m, true
}

// walkObject calls fn with the name (unescaped) and the raw value of every
// member of the object raw, in order, until fn returns false; raw must be
// valid JSON (json.Valid). It allocates nothing for names without escapes:
// name and value are slices of raw. It returns false when raw is not an
// object or fn stopped the walk.
func walkObject(raw []byte, fn func(name []byte, value json.RawMessage) bool) bool {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return false
	}
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return true
	}
	for i < len(raw) {
		if raw[i] != '"' {
			return false
		}
		end := skipString(raw, i)
		name, ok := decodeName(raw[i:end])
		if !ok {
			return false
		}
		i = skipSpace(raw, end)
		if i >= len(raw) || raw[i] != ':' {
			return false
		}
		i = skipSpace(raw, i+1)
		vEnd := skipValue(raw, i)
		if vEnd <= i {
			return false
		}
		if !fn(name, json.RawMessage(raw[i:vEnd])) {
			return false
		}
		i = skipSpace(raw, vEnd)
		if i >= len(raw) {
			return false
		}
		if raw[i] == '}' {
			return true
		}
		if raw[i] != ',' {
			return false
		}
		i = skipSpace(raw, i+1)
	}
	return false
}

// setMember sets name to v: the last of duplicates wins.
func setMember(m []member, name []byte, v json.RawMessage) []member {
	for j := range m {
		if bytes.Equal(m[j].name, name) {
			m[j].raw = v
			return m
		}
	}
	return append(m, member{name: name, raw: v})
}

// decodeName returns the content of the string token raw: raw itself
// without its quotes when it has no escapes.
func decodeName(raw []byte) ([]byte, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return nil, false
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return raw[1 : len(raw)-1], true
	}
	s, ok := decodeString(raw)
	return []byte(s), ok
}

// splitArray returns the elements of the array raw.
func splitArray(raw []byte) ([]json.RawMessage, bool) {
	out := []json.RawMessage{}
	ok := walkArray(raw, func(v json.RawMessage) bool {
		out = append(out, v)
		return true
	})
	if !ok {
		return nil, false
	}
	return out, true
}

// walkArray calls fn with every element of the array raw, in order, until
// fn returns false (then, or when raw is not an array, it returns false).
// It allocates nothing: the elements are slices of raw.
func walkArray(raw []byte, fn func(v json.RawMessage) bool) bool {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '[' {
		return false
	}
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == ']' {
		return true
	}
	for i < len(raw) {
		end := skipValue(raw, i)
		if end <= i {
			return false
		}
		if !fn(json.RawMessage(raw[i:end])) {
			return false
		}
		i = skipSpace(raw, end)
		if i >= len(raw) {
			return false
		}
		if raw[i] == ']' {
			return true
		}
		if raw[i] != ',' {
			return false
		}
		i = skipSpace(raw, i+1)
	}
	return false
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string starting at b[i] == '"'.
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// skipValue returns the index after the value starting at b[i].
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = skipString(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return len(b)
	}
	for ; i < len(b); i++ { // number, true, false, null
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
	}
	return i
}
