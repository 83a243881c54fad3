//go:build race

package snapshot

// raceEnabled: the race detector slows every memory access; tests that
// stream gigabytes stream less.
const raceEnabled = true
