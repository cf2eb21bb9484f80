package idempotency

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"unicode/utf8"
)

// errNotJSON stops canonicalisation of a body that is not one JSON value.
var errNotJSON = errors.New("idempotency: not a JSON value")

// canonicalJSON returns body in canonical form: insignificant whitespace
// dropped, object members sorted by key, strings in encoding/json's
// escaping, numbers as written. It produces exactly what re-marshalling the
// decoded value (json.Number for numbers) would, in one pass over the bytes
// and without building a tree. A body that is not a single JSON value is
// returned unchanged (it is then compared byte for byte).
func canonicalJSON(body []byte) []byte {
	var out []byte
	withCanonicalJSON(body, func(b []byte) { out = bytes.Clone(b) })
	return out
}

// withCanonicalJSON calls use with canonicalJSON(body), valid only during
// the call: the buffers are reused by later calls (no allocation per
// request once warm).
func withCanonicalJSON(body []byte, use func([]byte)) {
	c := canons.Get().(*canon)
	defer c.release()
	c.src, c.pos = body, 0
	c.skipSpace()
	out, err := c.value(c.out[:0])
	if err != nil {
		use(body)
		return
	}
	c.out = out
	if c.skipSpace(); c.pos != len(c.src) {
		use(body)
		return
	}
	use(out)
}

// canon is the state of one canonicalisation, and buffers kept for the
// next: the output, and per object depth the scratch of members and their
// order (an object is finished before the next one of its depth starts).
type canon struct {
	src     []byte
	pos     int
	out     []byte
	depth   int
	scratch [][]byte
	members [][]member
}

var canons = sync.Pool{New: func() any { return &canon{} }}

// maxKeptBuffer bounds the buffers a pooled canon keeps.
const maxKeptBuffer = 64 << 10

func (c *canon) release() {
	c.src, c.depth = nil, 0
	if cap(c.out) > maxKeptBuffer {
		c.out = nil
	}
	for i := range c.members {
		clear(c.members[i][:cap(c.members[i])]) // no reference to the body stays
	}
	canons.Put(c)
}

// objectBuffers returns the scratch and member buffers of depth d, empty.
func (c *canon) objectBuffers(d int) ([]byte, []member) {
	for len(c.scratch) <= d {
		c.scratch = append(c.scratch, make([]byte, 0, 256))
		c.members = append(c.members, make([]member, 0, 8))
	}
	return c.scratch[d][:0], c.members[d][:0]
}

// keepObjectBuffers keeps the (possibly grown) buffers of depth d.
func (c *canon) keepObjectBuffers(d int, scratch []byte, members []member) {
	if cap(scratch) > maxKeptBuffer {
		scratch = nil
	}
	c.scratch[d], c.members[d] = scratch[:0], members[:0]
}

func (c *canon) skipSpace() {
	for c.pos < len(c.src) {
		switch c.src[c.pos] {
		case ' ', '\t', '\n', '\r':
			c.pos++
		default:
			return
		}
	}
}

func (c *canon) value(out []byte) ([]byte, error) {
	if c.pos >= len(c.src) {
		return nil, errNotJSON
	}
	switch b := c.src[c.pos]; {
	case b == '{':
		return c.object(out)
	case b == '[':
		return c.array(out)
	case b == '"':
		tok, err := c.stringToken()
		if err != nil {
			return nil, err
		}
		return appendCanonicalString(out, tok)
	case b == 't':
		return c.literal(out, "true")
	case b == 'f':
		return c.literal(out, "false")
	case b == 'n':
		return c.literal(out, "null")
	default:
		return c.number(out)
	}
}

func (c *canon) literal(out []byte, lit string) ([]byte, error) {
	if !bytes.HasPrefix(c.src[c.pos:], []byte(lit)) {
		return nil, errNotJSON
	}
	c.pos += len(lit)
	return append(out, lit...), nil
}

func (c *canon) number(out []byte) ([]byte, error) {
	start := c.pos
	for c.pos < len(c.src) {
		switch b := c.src[c.pos]; {
		case b >= '0' && b <= '9', b == '-', b == '+', b == '.', b == 'e', b == 'E':
			c.pos++
			continue
		}
		break
	}
	tok := c.src[start:c.pos]
	if !validNumber(tok) {
		return nil, errNotJSON
	}
	return append(out, tok...), nil
}

// validNumber reports whether tok is a JSON number:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func validNumber(tok []byte) bool {
	i := 0
	digits := func() int {
		n := 0
		for i < len(tok) && tok[i] >= '0' && tok[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(tok) && tok[i] == '-' {
		i++
	}
	switch {
	case i < len(tok) && tok[i] == '0':
		i++
	case digits() == 0:
		return false
	}
	if i < len(tok) && tok[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(tok) && (tok[i] == 'e' || tok[i] == 'E') {
		i++
		if i < len(tok) && (tok[i] == '+' || tok[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(tok)
}

// stringToken returns the quoted string token at pos, quotes included.
func (c *canon) stringToken() ([]byte, error) {
	start := c.pos
	c.pos++
	for c.pos < len(c.src) {
		switch c.src[c.pos] {
		case '\\':
			c.pos += 2
			continue
		case '"':
			c.pos++
			return c.src[start:c.pos], nil
		}
		c.pos++
	}
	return nil, errNotJSON
}

// appendCanonicalString appends a string as encoding/json marshals it: the
// token itself when that is already its form (the common case), else the
// unquoted value re-encoded.
func appendCanonicalString(out, tok []byte) ([]byte, error) {
	inner := tok[1 : len(tok)-1]
	plain := utf8.Valid(inner)
	for i := 0; plain && i < len(inner); i++ {
		switch b := inner[i]; {
		case b == '\\', b == '<', b == '>', b == '&', b < 0x20:
			plain = false
		case b == 0xe2 && i+2 < len(inner) && inner[i+1] == 0x80 && (inner[i+2] == 0xa8 || inner[i+2] == 0xa9): // U+2028, U+2029
			plain = false
		}
	}
	if plain {
		return append(out, tok...), nil
	}
	var s string // JSON's own unescaping (surrogate pairs, \/, invalid UTF-8)
	if json.Unmarshal(tok, &s) != nil {
		return nil, errNotJSON
	}
	enc, err := json.Marshal(s)
	if err != nil {
		return nil, errNotJSON
	}
	return append(out, enc...), nil
}

// member is one object member: its key (unescaped, for ordering) and where
// its canonical "key":value lies in the object's scratch buffer.
type member struct {
	key        []byte
	start, end int
}

func (c *canon) object(out []byte) ([]byte, error) {
	c.pos++ // {
	c.skipSpace()
	if c.pos < len(c.src) && c.src[c.pos] == '}' {
		c.pos++
		return append(out, '{', '}'), nil
	}
	d := c.depth
	c.depth++
	defer func() { c.depth-- }()
	scratch, members := c.objectBuffers(d)
	defer func() { c.keepObjectBuffers(d, scratch, members) }()
	for {
		c.skipSpace()
		if c.pos >= len(c.src) || c.src[c.pos] != '"' {
			return nil, errNotJSON
		}
		tok, err := c.stringToken()
		if err != nil {
			return nil, err
		}
		start := len(scratch)
		if scratch, err = appendCanonicalString(scratch, tok); err != nil {
			return nil, err
		}
		key := tok[1 : len(tok)-1] // a plain key is its own value
		if !bytes.Equal(scratch[start:], tok) || bytes.IndexByte(tok, '\\') >= 0 {
			var k string // escaped: order by the unescaped value
			if err := json.Unmarshal(tok, &k); err != nil {
				return nil, errNotJSON
			}
			key = []byte(k)
		}
		c.skipSpace()
		if c.pos >= len(c.src) || c.src[c.pos] != ':' {
			return nil, errNotJSON
		}
		c.pos++
		c.skipSpace()
		scratch = append(scratch, ':')
		if scratch, err = c.value(scratch); err != nil {
			return nil, err
		}
		members = append(members, member{key: key, start: start, end: len(scratch)})
		c.skipSpace()
		if c.pos >= len(c.src) {
			return nil, errNotJSON
		}
		if c.src[c.pos] == ',' {
			c.pos++
			continue
		}
		if c.src[c.pos] != '}' {
			return nil, errNotJSON
		}
		c.pos++
		break
	}
	// Sorted by key; of duplicate keys the decoder keeps the last one.
	slices.SortStableFunc(members, func(a, b member) int { return bytes.Compare(a.key, b.key) })
	out = append(out, '{')
	wrote := false
	for i, m := range members {
		if i+1 < len(members) && bytes.Equal(members[i+1].key, m.key) {
			continue
		}
		if wrote {
			out = append(out, ',')
		}
		out = append(out, scratch[m.start:m.end]...)
		wrote = true
	}
	return append(out, '}'), nil
}

func (c *canon) array(out []byte) ([]byte, error) {
	c.pos++ // [
	out = append(out, '[')
	c.skipSpace()
	if c.pos < len(c.src) && c.src[c.pos] == ']' {
		c.pos++
		return append(out, ']'), nil
	}
	for first := true; ; first = false {
		if !first {
			out = append(out, ',')
		}
		c.skipSpace()
		var err error
		if out, err = c.value(out); err != nil {
			return nil, err
		}
		c.skipSpace()
		if c.pos >= len(c.src) {
			return nil, errNotJSON
		}
		if c.src[c.pos] == ',' {
			c.pos++
			continue
		}
		if c.src[c.pos] != ']' {
			return nil, errNotJSON
		}
		c.pos++
		return append(out, ']'), nil
	}
}
