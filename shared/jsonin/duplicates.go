package jsonin

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode"
	"unicode/utf8"
)

// DuplicateKey reports the path of the first member name given twice in one
// object of raw, a valid JSON document, at any depth (see nameClash). For
// decoders of outside bytes that do not go through Parse. Names that
// differ only in letter case are not duplicates here (Parse refuses them
// too).
func DuplicateKey(raw []byte) (string, bool) {
	c, found := findClash(raw, false)
	return c.second, found
}

// clash is two member names of one object that decoders may take for
// one: the same name given twice (same), or two names that differ only in
// letter case ("type" and "Type"), which encoding/json, among others,
// matches to one field. first and second are their paths, in document
// order ("paymentMethod.type", "paymentMethod.Type"), and names their
// member names ("type", "Type").
type clash struct {
	first, second string
	names         [2]string
	same          bool
}

// findClash reports the first clash of member names, at any depth, of raw,
// a valid JSON document: a name given twice, and with fold also two names
// equal under Unicode simple case folding (bytes.EqualFold, the matching
// encoding/json does). encoding/json and most decoders let the last of
// duplicates win while others take the first, and a case-insensitive
// decoder reads "Type" as "type" where a case-sensitive one does not, so
// such a document means different things to the service and to the
// upstream: it is refused, pass-through parts included. It allocates only
// for objects of more than 16 members and on finding a clash.
func findClash(raw []byte, fold bool) (clash, bool) {
	s := nameScan{raw: raw, fold: fold}
	_, found := s.value(skipSpace(raw, 0))
	return s.found, found
}

// nameScan is one findClash walk: on a clash, found holds it with paths
// relative to the innermost object or array seen so far, each level on
// the way out prefixing its part (prefix).
type nameScan struct {
	raw   []byte
	fold  bool
	found clash
}

// value scans the value at raw[i] and returns the index after it.
func (s *nameScan) value(i int) (int, bool) {
	if i >= len(s.raw) {
		return i, false
	}
	switch s.raw[i] {
	case '{':
		return s.object(i)
	case '[':
		return s.array(i)
	}
	return skipValue(s.raw, i), false
}

func (s *nameScan) object(i int) (int, bool) {
	raw := s.raw
	var small [16][]byte
	keys := small[:0]
	var many map[string][]byte // folded (or exact) name -> name
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return i + 1, false
	}
	for i < len(raw) {
		end := skipString(raw, i)
		key := keyBytes(raw[i:end])
		if prev := s.seen(key, keys, many); prev != nil {
			a, b := string(prev), string(key)
			s.found = clash{first: a, second: b, names: [2]string{a, b}, same: a == b}
			return end, true
		}
		if many == nil && len(keys) == cap(small) {
			many = make(map[string][]byte, 2*len(keys))
			for _, k := range keys {
				many[s.mapKey(k)] = k
			}
		}
		if many != nil {
			many[s.mapKey(key)] = key
		} else {
			keys = append(keys, key)
		}
		i = skipSpace(raw, end)
		i = skipSpace(raw, i+1) // ':'
		next, found := s.value(i)
		if found {
			s.prefix(string(key))
			return next, true
		}
		i = skipSpace(raw, next)
		if i >= len(raw) || raw[i] == '}' {
			return i + 1, false
		}
		i = skipSpace(raw, i+1) // ','
	}
	return i, false
}

func (s *nameScan) array(i int) (int, bool) {
	raw := s.raw
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == ']' {
		return i + 1, false
	}
	for n := 0; i < len(raw); n++ {
		next, found := s.value(i)
		if found {
			s.prefix("[" + strconv.Itoa(n) + "]")
			return next, true
		}
		i = skipSpace(raw, next)
		if i >= len(raw) || raw[i] == ']' {
			return i + 1, false
		}
		i = skipSpace(raw, i+1) // ','
	}
	return i, false
}

// prefix puts head (a member name or an index) before both paths of the
// clash found inside the value it names.
func (s *nameScan) prefix(head string) {
	s.found.first = joinPath(head, s.found.first)
	s.found.second = joinPath(head, s.found.second)
}

// seen returns the name of keys (or many) that key clashes with, or nil.
func (s *nameScan) seen(key []byte, keys [][]byte, many map[string][]byte) []byte {
	if many != nil {
		return many[s.mapKey(key)]
	}
	for _, k := range keys {
		if s.fold && bytes.EqualFold(k, key) || bytes.Equal(k, key) {
			return k
		}
	}
	return nil
}

// mapKey is the key of name in a large object's map: name itself, or with
// fold its simple case folding's canonical form.
func (s *nameScan) mapKey(name []byte) string {
	if !s.fold {
		return string(name)
	}
	return foldName(name)
}

// foldName returns name with each rune replaced by the smallest rune of
// its simple case folding orbit, so that foldName(a) == foldName(b)
// exactly when bytes.EqualFold(a, b).
func foldName(name []byte) string {
	out := make([]byte, 0, len(name))
	for _, r := range string(name) {
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		out = utf8.AppendRune(out, least)
	}
	return string(out)
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
