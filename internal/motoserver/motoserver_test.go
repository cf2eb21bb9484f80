package motoserver

import "testing"

// The server's address is found in its "Running on" line however the
// output is split into writes, and only once.
func TestTailBufferFindsTheAddress(t *testing.T) {
	for _, tc := range []struct {
		name   string
		writes []string
		want   string
	}{
		{"one write", []string{"WARNING: dev server\n * Running on http://127.0.0.1:41234\nPress CTRL+C\n"}, "http://127.0.0.1:41234"},
		{"split inside the line", []string{" * Running on http://127.0.", "0.1:5", "01\n"}, "http://127.0.0.1:501"},
		{"split at the newline", []string{" * Running on http://127.0.0.1:6000", "\n * Running on http://127.0.0.1:7000\n"}, "http://127.0.0.1:6000"},
		{"not yet a whole line", []string{" * Running on http://127.0.0.1:6000"}, ""},
		{"another address", []string{" * Running on http://0.0.0.0:5000\n"}, ""},
	} {
		b := &tailBuffer{max: 64, want: runningOn, found: make(chan string, 1)}
		for _, w := range tc.writes {
			if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
				t.Fatalf("%s: Write = %d, %v", tc.name, n, err)
			}
		}
		got := ""
		select {
		case got = <-b.found:
		default:
		}
		if got != tc.want {
			t.Errorf("%s: found %q, want %q", tc.name, got, tc.want)
		}
		select {
		case again := <-b.found:
			t.Errorf("%s: found a second address %q", tc.name, again)
		default:
		}
	}
}
