package jsonin

// Source is a document's bytes and the same bytes as one string, copied
// once: String of a slice of the bytes is a slice of that string, so a
// decoder makes no copy per string value.
type Source struct {
	raw  []byte
	text string
}

// NewSource copies raw to one string.
func NewSource(raw []byte) Source { return Source{raw: raw, text: string(raw)} }

// String returns b as a string: a slice of the source's string when b is
// a slice of its bytes (no copy), else a copy.
func (s Source) String(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if off := cap(s.raw) - cap(b); off >= 0 && off+len(b) <= len(s.raw) && &s.raw[off] == &b[0] {
		return s.text[off : off+len(b)]
	}
	return string(b)
}
