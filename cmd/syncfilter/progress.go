package main

import (
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// progress reports scan progress on stderr through the logger: on a
// terminal, a bar redrawn in place that fits the terminal's width;
// otherwise, as for cron, a log line every few seconds (stamped by the
// logger). The rate (and so an ETA) is shown only once it is known:
// measured from the first report, over at least a second. update is
// called from the scanning goroutine; after finish it prints nothing.
type progress struct {
	log   *logger
	width int // terminal columns; 0: unknown (80 assumed)
	every time.Duration
	now   func() time.Time
	label string // the source scanned, when the run rebuilds several ("": the only one)

	mu        sync.Mutex
	finished  bool
	first     time.Time // the first report: the rate is measured from it
	firstDone int64
	last      time.Time
	lastDone  int64 // rows of the last line written (no line twice)
}

func newProgress(log *logger, width int) *progress {
	every := 5 * time.Second
	if log.terminal {
		every = 100 * time.Millisecond
	}
	return &progress{log: log, width: width, every: every, now: time.Now, lastDone: -1}
}

func (p *progress) update(done, total int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finished {
		return
	}
	now := p.now()
	if p.first.IsZero() {
		p.first, p.firstDone = now, done
	}
	final := done >= total
	if done == p.lastDone || (!final && now.Sub(p.last) < p.every) {
		return
	}
	if !p.log.terminal && final {
		return // the summary says it
	}
	p.last, p.lastDone = now, done
	pct := 100.0
	if total > 0 {
		pct = min(100, 100*float64(done)/float64(total))
	}
	rate, eta := "", ""
	if el := now.Sub(p.first); el >= time.Second && done > p.firstDone {
		r := float64(done-p.firstDone) / el.Seconds()
		rate = fmt.Sprintf(", %.0f rows/s", r)
		if left := total - done; left > 0 {
			eta = ", eta " + (time.Duration(float64(left)/r) * time.Second).Round(time.Second).String()
		}
	}
	text := fmt.Sprintf("%d/%d rows (%.0f%%)%s%s", done, total, pct, rate, eta)
	if p.label != "" {
		text = p.label + ": " + text
	}
	if !p.log.terminal {
		p.log.printf("syncfilter rebuild: %s", text)
		return
	}
	p.log.draw(p.bar(pct, text))
}

// bar returns the bar line, never wider than the terminal minus one
// column (so it never wraps), shortening the bar and then the text.
func (p *progress) bar(pct float64, text string) string {
	width := p.width
	if width <= 0 {
		width = 80
	}
	avail := width - 1
	line := text
	if barW := min(30, avail-utf8.RuneCountInString(text)-3); barW >= 5 {
		filled := int(pct / 100 * float64(barW))
		line = "[" + strings.Repeat("=", filled) + strings.Repeat(" ", barW-filled) + "] " + text
	}
	if r := []rune(line); len(r) > avail {
		line = string(r[:max(0, avail)])
	}
	return line
}

// finish stops the reports (a scan goroutine's late call prints nothing)
// and ends the bar's line.
func (p *progress) finish() {
	p.mu.Lock()
	p.finished = true
	p.mu.Unlock()
	p.log.mu.Lock()
	p.log.endBar()
	p.log.mu.Unlock()
}
