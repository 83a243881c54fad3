package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// fakeClock advances by step at every reading.
func fakeClock(step time.Duration) func() time.Time {
	t := time.Date(2026, 12, 1, 3, 17, 0, 0, time.UTC)
	return func() time.Time { t = t.Add(step); return t }
}

func TestProgressOffATerminal(t *testing.T) {
	t.Parallel()
	var log bytes.Buffer
	lg := newLogger(&log, false)
	p := newProgress(lg, 0)
	p.now, lg.now, p.every = fakeClock(3*time.Second), fakeClock(time.Second), 5*time.Second
	for done := int64(10_000); done <= 100_000; done += 10_000 {
		p.update(done, 100_000)
	}
	p.update(100_000, 100_000) // reported twice by the scan: printed never (the summary says it)
	p.finish()
	n := log.Len()
	p.update(100_001, 200_000) // a late report after finish: nothing
	lg.close()
	lg.printf("after the summary")
	if log.Len() != n {
		t.Fatalf("written after finish: %q", log.String()[n:])
	}
	lines := strings.Split(strings.TrimSuffix(log.String(), "\n"), "\n")
	stamp := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ syncfilter rebuild: \d+/100000 rows`)
	for _, l := range lines {
		if !stamp.MatchString(l) {
			t.Fatalf("log line %q lacks its RFC 3339 UTC time", l)
		}
	}
	if strings.Contains(lines[0], "eta") || strings.Contains(lines[0], "rows/s") {
		t.Fatalf("the first line guesses a rate: %q", lines[0])
	}
	if !strings.Contains(lines[1], "eta") {
		t.Fatalf("no ETA once the rate is known: %q", lines[1])
	}
	if strings.Contains(log.String(), "100000/100000") || strings.Contains(log.String(), "\r") {
		t.Fatalf("log: %q", log.String())
	}
}

func TestProgressFitsTheTerminal(t *testing.T) {
	t.Parallel()
	for _, width := range []int{20, 40, 60, 132} {
		var term bytes.Buffer
		p := newProgress(newLogger(&term, true), width)
		p.now, p.every = fakeClock(2*time.Second), 0
		for done := int64(0); done <= 12_345_678; done += 1_234_567 {
			p.update(done, 12_345_678)
		}
		p.finish()
		for _, frame := range strings.Split(strings.TrimSuffix(term.String(), "\n"), "\r") {
			frame = strings.TrimSuffix(frame, "\x1b[K")
			if n := utf8.RuneCountInString(frame); n >= width {
				t.Fatalf("width %d: a %d-column frame would wrap: %q", width, n, frame)
			}
		}
		if !strings.HasSuffix(term.String(), "\n") {
			t.Fatalf("width %d: the bar's line is not ended", width)
		}
	}
}
