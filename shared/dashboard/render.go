package dashboard

import (
	"encoding/json"
	"fmt"
	"html"
	"html/template"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/upstream/simulator"
)

// The lookup answer is rendered from its JSON, whatever fields it has: the
// payment's fields in this order first, amounts as amounts, arrays of
// objects (the timeline, ledger entries) as tables.
var (
	paymentFields = []string{"pspReference", "merchantReference", "siteId", "state", "refusalReason", "paymentMethod", "paymentSource", "createdAt", "updatedAt"}
	ledgerFields  = []string{"amount", "authorisedAmount", "capturedAmount", "refundedAmount", "capturesInFlight", "refundsInFlight", "refundableAmount"}
)

// field is one name and rendered value.
type field struct {
	Name  string
	Value template.HTML
}

// table is an array of objects.
type table struct {
	Name    string
	Columns []string
	Rows    [][]template.HTML
}

// paymentView splits a lookup answer into the payment's fields, its
// amounts (the ledger's balances), and its tables.
func paymentView(view map[string]any) (info, ledger []field, tables []table) {
	done := map[string]bool{}
	for _, k := range paymentFields {
		if v, ok := view[k]; ok {
			info, done[k] = append(info, field{k, renderValue(v)}), true
		}
	}
	for _, k := range ledgerFields {
		if v, ok := view[k]; ok {
			ledger, done[k] = append(ledger, field{k, renderValue(v)}), true
		}
	}
	// The timeline first, then any other table.
	keys := slices.Sorted(maps.Keys(view))
	if i := slices.Index(keys, "timeline"); i > 0 {
		keys = append([]string{"timeline"}, slices.Delete(keys, i, i+1)...)
	}
	for _, k := range keys {
		if done[k] {
			continue
		}
		if rows, ok := objects(view[k]); ok {
			tables = append(tables, toTable(k, rows))
			continue
		}
		if _, isAmount := asAmount(view[k]); isAmount {
			ledger = append(ledger, field{k, renderValue(view[k])})
			continue
		}
		info = append(info, field{k, renderValue(view[k])})
	}
	return info, ledger, tables
}

// objects returns v as a list of objects, if it is one.
func objects(v any) ([]map[string]any, bool) {
	list, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]map[string]any, 0, len(list))
	for _, x := range list {
		m, ok := x.(map[string]any)
		if !ok {
			return nil, false
		}
		out = append(out, m)
	}
	return out, true
}

// toTable lays out rows with the union of their keys as columns, in the
// order they first appear (time, kind and source lead when present).
func toTable(name string, rows []map[string]any) table {
	t := table{Name: name}
	seen := map[string]bool{}
	for _, lead := range []string{"time", "kind", "source", "eventCode"} {
		for _, r := range rows {
			if _, ok := r[lead]; ok && !seen[lead] {
				seen[lead] = true
				t.Columns = append(t.Columns, lead)
			}
		}
	}
	for _, r := range rows {
		for _, k := range slices.Sorted(maps.Keys(r)) {
			if !seen[k] {
				seen[k] = true
				t.Columns = append(t.Columns, k)
			}
		}
	}
	for _, r := range rows {
		cells := make([]template.HTML, len(t.Columns))
		for i, c := range t.Columns {
			if v, ok := r[c]; ok {
				cells[i] = renderValue(v)
			}
			if kind, ok := r["kind"].(string); ok && c == "kind" && name == "timeline" {
				cells[i] = timelineKind(kind, r["source"])
			}
		}
		t.Rows = append(t.Rows, cells)
	}
	return t
}

// timelineKind tells a timeline entry's two sources apart: the
// merchant's API call ("capture-requested": → capture requested) and the
// platform's notification (CAPTURE: ← CAPTURE).
func timelineKind(kind string, source any) template.HTML {
	if source == "api" {
		return template.HTML(`<span class="src-api" title="an API call">→ ` + html.EscapeString(strings.ReplaceAll(kind, "-", " ")) + `</span>`)
	}
	if source == "notification" {
		return template.HTML(`<span class="src-notification" title="a notification of the platform">← <strong>` + html.EscapeString(kind) + `</strong></span>`)
	}
	return template.HTML(html.EscapeString(kind))
}

// asAmount reads {value, currency}.
func asAmount(v any) (money.Amount, bool) {
	m, ok := v.(map[string]any)
	if !ok || len(m) != 2 {
		return money.Amount{}, false
	}
	val, okV := m["value"].(float64)
	cur, okC := m["currency"].(string)
	return money.Amount{Value: int64(val), Currency: cur}, okV && okC
}

// renderValue renders one JSON value, escaped.
func renderValue(v any) template.HTML {
	if a, ok := asAmount(v); ok {
		return template.HTML(`<span class="amount">` + html.EscapeString(simulator.FormatAmount(a)) + `</span>`)
	}
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		if t, err := time.Parse(time.RFC3339Nano, x); err == nil {
			return template.HTML(`<time datetime="` + html.EscapeString(x) + `">` + html.EscapeString(t.UTC().Format("2006-01-02 15:04:05")) + `</time>`)
		}
		return template.HTML(html.EscapeString(x))
	case bool, float64:
		return template.HTML(html.EscapeString(fmt.Sprint(x)))
	}
	if m, ok := v.(map[string]any); ok { // e.g. paymentMethod: its fields, readable
		var b strings.Builder
		b.WriteString(`<span class="kv">`)
		for _, k := range slices.Sorted(maps.Keys(m)) {
			b.WriteString(`<span><b>` + html.EscapeString(k) + `</b> ` + string(renderValue(m[k])) + `</span>`)
		}
		b.WriteString(`</span>`)
		return template.HTML(b.String())
	}
	b, _ := json.Marshal(v)
	return template.HTML(`<code>` + html.EscapeString(string(b)) + `</code>`)
}

// when formats a time for the tables.
func when(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05")
}

// whenPtr is when of an optional time.
func whenPtr(t *time.Time) string {
	if t == nil {
		return ""
	}
	return when(*t)
}

// short keeps long ids readable in tables.
func short(s string) string {
	if len(s) <= 24 {
		return s
	}
	return s[:12] + "…" + s[len(s)-8:]
}

// prettyJSON indents a JSON document for display.
func prettyJSON(raw json.RawMessage) string {
	var b strings.Builder
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
	return b.String()
}

// amountText formats an amount of a list ("" when there is none).
func amountText(a money.Amount) string {
	if a.Currency == "" {
		return ""
	}
	return simulator.FormatAmount(a)
}
