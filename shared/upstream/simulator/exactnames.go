package simulator

import (
	"encoding/json"
	"reflect"
	"strings"
)

// unmarshal decodes a request's JSON into v as the platform reads it:
// member names match a field's name exactly. encoding/json also matches a
// name in another letter case ("Type" for "type", "UserAgent" for
// "userAgent"), which the platform does not: there "Type" is an unknown
// member and ignored, like every unknown member here. So each object
// decoded into a struct loses, before encoding/json sees it, the members
// that name none of its fields exactly — at any depth, through pointers,
// slices and maps. Values decoded into anything else (json.RawMessage,
// map[string]any, types with their own UnmarshalJSON) stay as sent.
func unmarshal(data []byte, v any) error {
	return json.Unmarshal(exactNames(data, reflect.TypeOf(v)), v)
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// exactNames returns data (a JSON value to be decoded into a t) with every
// object that becomes a struct keeping only the members whose names match
// a field exactly. Data that does not decode as t's shape is returned as
// it is, for encoding/json to report.
func exactNames(data []byte, t reflect.Type) []byte {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		return data
	}
	var out any
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		var m map[string]json.RawMessage
		if json.Unmarshal(data, &m) != nil || m == nil {
			return data
		}
		var fields map[string]reflect.Type
		if t.Kind() == reflect.Struct {
			fields = jsonFields(t)
		}
		for name, value := range m {
			ft, ok := fields[name]
			if t.Kind() == reflect.Map {
				ft, ok = t.Elem(), true
			}
			if !ok {
				delete(m, name) // unknown to the platform, in any letter case
				continue
			}
			m[name] = exactNames(value, ft)
		}
		out = m
	case reflect.Slice, reflect.Array:
		var items []json.RawMessage
		if t.Elem().Kind() == reflect.Uint8 || json.Unmarshal(data, &items) != nil || items == nil {
			return data
		}
		for i := range items {
			items[i] = exactNames(items[i], t.Elem())
		}
		out = items
	default:
		return data
	}
	b, err := json.Marshal(out)
	if err != nil {
		return data
	}
	return b
}

// jsonFields returns the JSON names of t's fields (struct t), as
// encoding/json names them, with their types; embedded structs' fields
// are promoted.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		ft := f.Type
		if f.Anonymous && name == "" {
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for n, typ := range jsonFields(ft) {
					if _, ok := out[n]; !ok {
						out[n] = typ
					}
				}
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		out[name] = ft
	}
	return out
}
