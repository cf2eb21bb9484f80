// Package jsonin decodes request bodies strictly and names every offending
// field with its full path (e.g. "lineItems[1].description"), so a merchant
// sees exactly what to fix. Handlers read the fields they know; Done reports
// every field nobody read as unknown.
package jsonin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/yp/paysvc/shared/apperr"
)

// Errors collects field errors across a whole document.
type Errors struct{ list []apperr.FieldError }

// Add records an error on field.
func (e *Errors) Add(field, msg string) {
	e.list = append(e.list, apperr.FieldError{Field: field, Message: msg})
}

// Err returns a 400 naming every field, or nil when there were none.
func (e *Errors) Err() error {
	if len(e.list) == 0 {
		return nil
	}
	return apperr.InvalidFields(e.list)
}

// Has reports whether any error was recorded.
func (e *Errors) Has() bool { return len(e.list) > 0 }

// Obj is a JSON object being read.
type Obj struct {
	// The path is made only for an error message: parent's path + "." +
	// name (parent nil: path as it is).
	parent  *Obj
	name    string
	path    string
	members []member
	errs    *Errors
	doc     *document
}

// document is one body being read, allocated once per Parse: its bytes
// and the same bytes as one string (a string field without escapes is a
// slice of it, not a copy), and room for the members and nested objects
// of a typical request (more spill to the heap).
type document struct {
	raw     []byte
	text    string
	root    Obj
	members [32]member
	nmember int
	objs    [4]Obj
	nobj    int
}

// str decodes the JSON string token raw of the document: one without
// escapes is a slice of the document's string.
func (d *document) str(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	if bytes.IndexByte(raw, '\\') >= 0 {
		return decodeString(raw)
	}
	return d.asString(raw[1 : len(raw)-1]), true
}

// asString returns b as a string: a slice of the document's string when b
// is a slice of its bytes (no copy), else a copy.
func (d *document) asString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if off := cap(d.raw) - cap(b); off >= 0 && off+len(b) <= len(d.raw) && &d.raw[off] == &b[0] {
		return d.text[off : off+len(b)]
	}
	return string(b)
}

// split returns the members of the object raw (splitObject), in the
// document's room while it lasts.
func (d *document) split(raw []byte) ([]member, bool) {
	if d.nmember == len(d.members) {
		return splitObject(raw, nil)
	}
	free := d.members[d.nmember:d.nmember:len(d.members)]
	m, ok := splitObject(raw, free)
	if !ok {
		return nil, false
	}
	if len(m) > 0 && &m[0] == &d.members[d.nmember] {
		d.nmember += len(m) // still in the room: taken
	}
	return m[:len(m):len(m)], true // capped: nothing appends into the room after it
}

// obj returns a new object of the document.
func (d *document) obj(o Obj) *Obj {
	o.doc = d
	if d.nobj == len(d.objs) {
		return &o
	}
	p := &d.objs[d.nobj]
	d.nobj++
	*p = o
	return p
}

// field returns the member name, or nil.
func (o *Obj) field(name string) *member {
	for i := range o.members {
		if string(o.members[i].name) == name {
			return &o.members[i]
		}
	}
	return nil
}

// jsonSpace is JSON's insignificant whitespace (RFC 8259, section 2).
const jsonSpace = " \t\n\r"

// Parse reads body as a JSON object. On malformed JSON or a non-object the
// returned Obj is nil and errs holds the reason; so it is, with the field
// named, for a document that would not mean the same to every decoder: a
// string with a byte that is not UTF-8 or an unpaired surrogate escape
// (strangeText), a name given twice, or two names of one object that
// differ only in letter case (findClash).
func Parse(body []byte, errs *Errors) *Obj {
	// JSON's own whitespace only: bytes.TrimSpace would also drop \v, \f
	// and Unicode spaces, which make a body invalid JSON.
	body = bytes.Trim(body, jsonSpace)
	if len(body) == 0 {
		errs.Add("", "request body must be a JSON object")
		return nil
	}
	if !json.Valid(body) { // one validating pass; the splitters then only find boundaries
		if !utf8.Valid(body) {
			errs.Add("", "request body must be UTF-8 JSON")
			return nil
		}
		msg := "invalid JSON"
		var v any
		if se, ok := json.Unmarshal(body, &v).(*json.SyntaxError); ok { // always, for invalid UTF-8 JSON
			msg = fmt.Sprintf("%s at offset %d", se, se.Offset)
		}
		errs.Add("", "malformed JSON: "+msg)
		return nil
	}
	if at, msg, found := strangeText(body); found {
		errs.Add(pathAt(body, at), msg)
		return nil
	}
	if c, found := findClash(body, true); found {
		if c.same {
			errs.Add(c.second, "is given more than once")
		} else {
			// Both named: which one the merchant meant is theirs to say.
			const msg = "is also given as %q: member names must differ by more than letter case"
			errs.Add(c.first, fmt.Sprintf(msg, c.names[1]))
			errs.Add(c.second, fmt.Sprintf(msg, c.names[0]))
		}
		return nil
	}
	d := &document{raw: body, text: string(body)}
	m, ok := d.split(body)
	if !ok {
		errs.Add("", "request body must be a JSON object")
		return nil
	}
	d.root = Obj{members: m, errs: errs, doc: d}
	return &d.root
}

// Path returns the full path of a field of o.
func (o *Obj) Path(name string) string {
	p := o.path
	if o.parent != nil {
		p = o.parent.Path(o.name)
	}
	if p == "" {
		return name
	}
	return p + "." + name
}

// Fail records an error on field name of o.
func (o *Obj) Fail(name, msg string) { o.errs.Add(o.Path(name), msg) }

// Has reports whether field name is present and not null.
func (o *Obj) Has(name string) bool {
	f := o.field(name)
	return f != nil && !isNull(f.raw)
}

func isNull(raw json.RawMessage) bool { return string(raw) == "null" }

// Raw marks name used and returns its raw JSON, unchanged (nil when absent
// or null).
func (o *Obj) Raw(name string, required bool) json.RawMessage {
	f := o.field(name)
	if f != nil {
		f.used = true
	}
	if f == nil || isNull(f.raw) {
		if required {
			o.Fail(name, "is required")
		}
		return nil
	}
	return f.raw
}

// Forbid reports each present field whose name is one of names in any
// letter case ("MerchantAccount" as well as "merchantAccount") as set by the
// service.
func (o *Obj) Forbid(names ...string) {
	for i := range o.members {
		f := &o.members[i]
		for _, n := range names {
			if strings.EqualFold(string(f.name), n) {
				f.used = true
				o.Fail(string(f.name), "is set by the service and must not be sent")
				break
			}
		}
	}
}

// Done reports every field that was not read as unknown, in name order.
func (o *Obj) Done() {
	var unknown []string
	for _, f := range o.members {
		if !f.used {
			unknown = append(unknown, string(f.name))
		}
	}
	sort.Strings(unknown)
	for _, n := range unknown {
		o.Fail(n, "is not a known field")
	}
}

// RawObject returns a field's raw JSON, which must be an object, to be
// passed on unchanged; rules apply to every string in it, at any depth,
// each breach named by its path.
func (o *Obj) RawObject(name string, required bool, rules ...Str) json.RawMessage {
	raw := o.Raw(name, required)
	if raw == nil {
		return nil
	}
	if raw[0] != '{' {
		o.Fail(name, "must be an object")
		return nil
	}
	o.checkText(raw, func() string { return o.Path(name) }, rules)
	return raw
}

// PassThrough takes every member of o nobody read as known, to be passed
// on unchanged (so Done does not report them); rules apply to every string
// in them, at any depth, each breach named by its path.
func (o *Obj) PassThrough(rules ...Str) {
	for i := range o.members {
		f := &o.members[i]
		if f.used {
			continue
		}
		f.used = true
		o.checkText(f.raw, func() string { return o.Path(string(f.name)) }, rules)
	}
}

// Str is a string rule: it returns a message when s breaks it.
type Str func(s string) string

// MaxLen limits a string's length in characters.
func MaxLen(n int) Str {
	return func(s string) string {
		if utf8.RuneCountInString(s) > n {
			return fmt.Sprintf("must be at most %d characters", n)
		}
		return ""
	}
}

// LenBetween bounds a string's length in characters.
func LenBetween(lo, hi int) Str {
	return func(s string) string {
		if c := utf8.RuneCountInString(s); c < lo || c > hi {
			return fmt.Sprintf("must be %d to %d characters", lo, hi)
		}
		return ""
	}
}

// NotEmpty rejects the empty string.
func NotEmpty(s string) string {
	if strings.TrimSpace(s) == "" {
		return "must not be empty"
	}
	return ""
}

// OneOf allows only the given values.
func OneOf(values ...string) Str {
	return func(s string) string {
		if slices.Contains(values, s) {
			return ""
		}
		return "must be one of " + strings.Join(values, ", ")
	}
}

// AbsoluteURL requires an absolute http(s) URL.
func AbsoluteURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || !u.IsAbs() || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return "must be an absolute http(s) URL"
	}
	return ""
}

// NoControl rejects control characters.
func NoControl(s string) string {
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return "must not contain control characters"
		}
	}
	return ""
}

// String reads an optional or required string field and applies rules.
func (o *Obj) String(name string, required bool, rules ...Str) (string, bool) {
	raw := o.Raw(name, required)
	if raw == nil {
		return "", false
	}
	s, ok := o.doc.str(raw)
	if !ok {
		o.Fail(name, "must be a string")
		return "", false
	}
	if msg := breach(s, rules); msg != "" {
		o.Fail(name, msg)
		return s, false
	}
	return s, true
}

// decodeString decodes a JSON string token with escapes.
func decodeString(raw []byte) (string, bool) {
	var s string
	err := json.Unmarshal(raw, &s)
	return s, err == nil
}

// Int reads an integer field within [lo, hi].
func (o *Obj) Int(name string, required bool, lo, hi int64) (int64, bool) {
	raw := o.Raw(name, required)
	if raw == nil {
		return 0, false
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		o.Fail(name, "must be an integer")
		return 0, false
	}
	if n < lo || n > hi {
		o.Fail(name, fmt.Sprintf("must be between %d and %d", lo, hi))
		return n, false
	}
	return n, true
}

// Bool reads a boolean field.
func (o *Obj) Bool(name string, required bool) (bool, bool) {
	raw := o.Raw(name, required)
	if raw == nil {
		return false, false
	}
	switch string(raw) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	o.Fail(name, "must be a boolean")
	return false, false
}

// Object reads a nested object; nil when absent or not an object.
func (o *Obj) Object(name string, required bool) *Obj {
	raw := o.Raw(name, required)
	if raw == nil {
		return nil
	}
	m, ok := o.doc.split(raw)
	if !ok {
		o.Fail(name, "must be an object")
		return nil
	}
	return o.doc.obj(Obj{parent: o, name: name, members: m, errs: o.errs})
}

// array splits member name's array of at most max elements; ok false
// when absent, or failed with notArray or the bound.
func (o *Obj) array(name string, required bool, max int, notArray string) (_ []json.RawMessage, ok bool) {
	raw := o.Raw(name, required)
	if raw == nil {
		return nil, false
	}
	arr, ok := splitArray(raw)
	if !ok {
		o.Fail(name, notArray)
		return nil, false
	}
	if len(arr) > max {
		o.Fail(name, fmt.Sprintf("must have at most %d elements", max))
		return nil, false
	}
	return arr, true
}

// Objects reads an array of objects, at most max long; nil when absent.
func (o *Obj) Objects(name string, required bool, max int) []*Obj {
	arr, ok := o.array(name, required, max, "must be an array")
	if !ok {
		return nil
	}
	out := make([]*Obj, 0, len(arr))
	for i, el := range arr {
		p := fmt.Sprintf("%s[%d]", o.Path(name), i)
		m, ok := o.doc.split(el)
		if !ok {
			o.errs.Add(p, "must be an object")
			continue
		}
		out = append(out, o.doc.obj(Obj{path: p, members: m, errs: o.errs}))
	}
	return out
}

// Strings reads an array of strings, at most max long, each checked by rules.
func (o *Obj) Strings(name string, required bool, max int, rules ...Str) []string {
	arr, ok := o.array(name, required, max, "must be an array of strings")
	if !ok {
		return nil
	}
	out := make([]string, 0, len(arr))
	for i, el := range arr {
		p := fmt.Sprintf("%s[%d]", o.Path(name), i)
		s, ok := o.doc.str(el)
		if !ok {
			o.errs.Add(p, "must be a string")
			continue
		}
		if msg := breach(s, rules); msg != "" {
			o.errs.Add(p, msg)
			continue
		}
		out = append(out, s)
	}
	return out
}

// StringMap reads an object whose values must all be strings, at most max
// entries. keyRule, when set, checks each key (returning a message to
// reject); rules check each value.
func (o *Obj) StringMap(name string, required bool, max int, keyRule Str, rules ...Str) map[string]string {
	raw := o.Raw(name, required)
	if raw == nil {
		return nil
	}
	m, ok := o.doc.split(raw)
	if !ok {
		o.Fail(name, "must be an object")
		return nil
	}
	if len(m) > max {
		o.Fail(name, fmt.Sprintf("must have at most %d entries", max))
		return nil
	}
	slices.SortFunc(m, func(a, b member) int { return bytes.Compare(a.name, b.name) })
	out := make(map[string]string, len(m))
	for _, f := range m {
		k := string(f.name)
		if keyRule != nil {
			if msg := keyRule(k); msg != "" {
				o.errs.Add(o.Path(name)+"."+k, msg)
				continue
			}
		}
		s, ok := o.doc.str(f.raw)
		if !ok {
			o.errs.Add(o.Path(name)+"."+k, "must be a string")
			continue
		}
		if msg := breach(s, rules); msg != "" {
			o.errs.Add(o.Path(name)+"."+k, msg)
			continue
		}
		out[k] = s
	}
	return out
}
