package admincli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// printJSON writes v as one indented JSON value on stdout.
func (c *cli) printJSON(v any) error {
	enc := json.NewEncoder(c.stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("write JSON: %w", err)
	}
	return nil
}

// printJSONLine writes v as one line of JSON (a stream of values).
func (c *cli) printJSONLine(v any) error {
	if err := json.NewEncoder(c.stdout).Encode(v); err != nil {
		return fmt.Errorf("write JSON: %w", err)
	}
	return nil
}

// warnf prints a warning on stderr.
func (c *cli) warnf(format string, args ...any) {
	fmt.Fprintf(c.stderr, "warning: "+format+"\n", args...)
}

// notef prints a note on stderr.
func (c *cli) notef(format string, args ...any) {
	fmt.Fprintf(c.stderr, format+"\n", args...)
}

// show prints v as JSON with --json (asJSON), otherwise the aligned text
// rows writes.
func (c *cli) show(asJSON bool, v any, rows func(t *table)) error {
	if asJSON {
		return c.printJSON(v)
	}
	t := newTable(c.stdout)
	rows(t)
	return t.flush()
}

// table is an aligned text table or list of fields on stdout, and text
// printed after it.
type table struct {
	w    io.Writer
	tw   *tabwriter.Writer
	text strings.Builder
}

func newTable(w io.Writer) *table {
	return &table{w: w, tw: tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)}
}

// row writes one row; empty cells are shown as "-".
func (t *table) row(cells ...string) {
	for i, s := range cells {
		if s == "" {
			cells[i] = "-"
		}
	}
	fmt.Fprintln(t.tw, strings.Join(cells, "\t"))
}

// flush writes the aligned table, then the text.
func (t *table) flush() error {
	err := t.tw.Flush()
	if err == nil {
		_, err = io.WriteString(t.w, t.text.String())
	}
	if err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}

// fmtTime formats t in UTC (RFC 3339), or "" for the zero time.
func fmtTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// fmtTimePtr formats *t, or "" for nil.
func fmtTimePtr(t *time.Time) string {
	if t == nil {
		return ""
	}
	return fmtTime(*t)
}

// yesNo formats a boolean for humans.
func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// join joins values with commas.
func join[T ~string](xs []T) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = string(x)
	}
	return strings.Join(parts, ",")
}

// mapped returns f of each of xs, in order (never nil: JSON shows []).
func mapped[T, U any](xs []T, f func(T) U) []U {
	out := make([]U, 0, len(xs))
	for _, x := range xs {
		out = append(out, f(x))
	}
	return out
}

// nonNil returns s, or an empty slice for nil so JSON shows [] not null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// wrap breaks text into lines of at most width characters at spaces.
func wrap(text string, width int) string {
	var b strings.Builder
	n := 0
	for i, word := range strings.Fields(text) {
		switch {
		case i == 0:
		case n+1+len(word) > width:
			b.WriteByte('\n')
			n = 0
		default:
			b.WriteByte(' ')
			n++
		}
		b.WriteString(word)
		n += len(word)
	}
	return b.String()
}
