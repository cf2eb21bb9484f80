package embedded

import (
	"bytes"
	"strings"
	"testing"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestReadJournal(t *testing.T) {
	j := &journal{size: 1 << 12, nonce: 7, pending: map[string][]byte{}}
	entry := func(nonce, seq uint64, key, raw string) []byte {
		j.nonce, j.seq = nonce, seq-1
		return encodeEntry(j, []byte(key), []byte(raw))
	}
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	a, b, c := entry(7, 1, "A", `{"v":1}`), entry(7, 2, "B", `{"v":2}`), entry(7, 3, "C", `{"v":3}`)
	torn := c[:len(c)-1]
	flipped := append([]byte(nil), c...)
	flipped[len(flipped)-1] ^= 1
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, ""},
		{"zeros", make([]byte, 100), ""},
		{"in sequence", cat(a, b, c, make([]byte, 64)), "A B C"},
		{"torn last entry", cat(a, b, torn), "A B"},
		{"flipped bit", cat(a, b, flipped), "A B"},
		{"another process's entry", cat(a, b, entry(8, 3, "C", `{}`)), "A B"},
		{"left from before the journal started over", cat(entry(7, 9, "X", `{}`), b, c), "X"},
		{"first entry of any nonce and sequence", cat(entry(9, 41, "A", `{}`), entry(9, 42, "B", `{}`)), "A B"},
		{"short header", a[:journalHeader-1], ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var keys []string
			for _, e := range readJournal(tc.data) {
				keys = append(keys, string(e.key))
			}
			if got := strings.Join(keys, " "); got != tc.want {
				t.Fatalf("entries %q, want %q", got, tc.want)
			}
		})
	}
}

// FuzzReadJournal: entries written in sequence read back as written,
// whatever follows them in the file (a torn entry, an older one, noise),
// and reading any bytes never panics.
func FuzzReadJournal(f *testing.F) {
	f.Add([]byte("PSP1"), []byte(`{"version":1}`), uint8(3), []byte{})
	f.Add([]byte(""), []byte(""), uint8(1), []byte{0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0})
	f.Add([]byte("K"), []byte("v"), uint8(0), bytes.Repeat([]byte{0}, 64))
	f.Fuzz(func(t *testing.T, key, raw []byte, n uint8, tail []byte) {
		readJournal(tail) // noise alone
		if len(key) > maxJournalKey {
			return
		}
		val := func(i int) []byte { return append(append([]byte(nil), raw...), byte(i)) }
		j := &journal{nonce: 99, pending: map[string][]byte{}}
		var data []byte
		for i := range int(n % 8) {
			data = append(data, encodeEntry(j, key, val(i))...)
			j.seq++
		}
		got := readJournal(append(data, tail...))
		if len(got) < int(n%8) {
			t.Fatalf("%d entries read back, want at least the %d written", len(got), n%8)
		}
		for i := range int(n % 8) {
			if !bytes.Equal(got[i].key, key) || !bytes.Equal(got[i].raw, val(i)) {
				t.Fatalf("entry %d read back as %q %q", i, got[i].key, got[i].raw)
			}
		}
	})
}
