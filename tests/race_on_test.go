//go:build race

package tests

// raceEnabled: this test binary runs with the race detector (what a
// build it starts can share the compiled dependencies of).
const raceEnabled = true
