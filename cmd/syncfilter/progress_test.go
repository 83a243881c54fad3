package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestProgressFormats(t *testing.T) {
	var term, log bytes.Buffer
	pt, pl := newProgress(&term, true), newProgress(&log, false)
	for _, p := range []*progress{pt, pl} {
		p.every = 0 // every update draws
		p.update(500, 1000)
		p.update(1000, 1000)
		p.finish()
	}
	if !strings.Contains(term.String(), "\r[") || !strings.Contains(term.String(), "1000/1000 rows") || !strings.HasSuffix(term.String(), "\n") {
		t.Fatalf("terminal bar: %q", term.String())
	}
	lines := strings.Split(strings.TrimSuffix(log.String(), "\n"), "\n")
	if len(lines) != 2 || strings.Contains(log.String(), "\r") || !strings.Contains(lines[0], "500/1000 rows (50%)") {
		t.Fatalf("log lines: %q", log.String())
	}
}
