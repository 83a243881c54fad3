package main

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// progress reports scan progress on stderr: on a terminal, a bar redrawn
// in place (rows, rate, ETA); otherwise, as for cron, a plain log line
// every few seconds. It is called from one goroutine.
type progress struct {
	w        io.Writer
	terminal bool
	every    time.Duration
	start    time.Time
	last     time.Time
	drawn    bool
}

func newProgress(w io.Writer, terminal bool) *progress {
	every := 5 * time.Second
	if terminal {
		every = 100 * time.Millisecond
	}
	return &progress{w: w, terminal: terminal, every: every, start: time.Now()}
}

func (p *progress) update(done, total int64) {
	now := time.Now()
	if now.Sub(p.last) < p.every && done < total {
		return
	}
	p.last = now
	elapsed := now.Sub(p.start).Seconds()
	rate := float64(done) / max(elapsed, 1e-9)
	eta := "?"
	if rate > 0 && total >= done {
		eta = (time.Duration(float64(total-done)/rate) * time.Second).Round(time.Second).String()
	}
	pct := 100.0
	if total > 0 {
		pct = 100 * float64(done) / float64(total)
	}
	if !p.terminal {
		fmt.Fprintf(p.w, "syncfilter rebuild: %d/%d rows (%.0f%%), %.0f rows/s, eta %s\n", done, total, pct, rate, eta)
		return
	}
	const width = 30
	filled := int(pct / 100 * width)
	bar := strings.Repeat("=", filled) + strings.Repeat(" ", width-filled)
	fmt.Fprintf(p.w, "\r[%s] %d/%d rows  %.0f rows/s  eta %s   ", bar, done, total, rate, eta)
	p.drawn = true
}

// finish ends the bar's line, if one was drawn.
func (p *progress) finish() {
	if p.drawn {
		fmt.Fprintln(p.w)
	}
}
