package main

import (
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"
)

// progress reports scan progress on stderr: on a terminal, a bar redrawn
// in place that fits the terminal's width; otherwise, as for cron, a log
// line every few seconds, each starting with an RFC 3339 UTC time. The
// rate (and so an ETA) is shown only once it is known: measured from the
// first report, over at least a second. It is called from one goroutine.
type progress struct {
	w        io.Writer
	terminal bool
	width    int // terminal columns; 0: unknown (80 assumed)
	every    time.Duration
	now      func() time.Time

	first     time.Time // the first report: the rate is measured from it
	firstDone int64
	last      time.Time
	lastDone  int64 // rows of the last line written (no line twice)
	drawn     bool
}

func newProgress(w io.Writer, terminal bool, width int) *progress {
	every := 5 * time.Second
	if terminal {
		every = 100 * time.Millisecond
	}
	return &progress{w: w, terminal: terminal, width: width, every: every, now: time.Now, lastDone: -1}
}

// logf writes one log line: off a terminal, stamped with the time.
func (p *progress) logf(format string, args ...any) {
	p.clear()
	if !p.terminal {
		fmt.Fprint(p.w, p.now().UTC().Format(time.RFC3339)+" ")
	}
	fmt.Fprintf(p.w, format+"\n", args...)
}

func (p *progress) update(done, total int64) {
	now := p.now()
	if p.first.IsZero() {
		p.first, p.firstDone = now, done
	}
	final := done >= total
	if done == p.lastDone || (!final && now.Sub(p.last) < p.every) {
		return
	}
	if !p.terminal && final {
		return // the summary line says it
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
	if !p.terminal {
		p.logf("syncfilter rebuild: %s", text)
		return
	}
	p.draw(pct, text)
}

// draw writes the bar line, never wider than the terminal minus one column
// (so it never wraps), shortening the bar and then the text.
func (p *progress) draw(pct float64, text string) {
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
	fmt.Fprint(p.w, "\r"+line+"\x1b[K") // erase what a longer previous line left
	p.drawn = true
}

// clear ends the bar's line, if one was drawn.
func (p *progress) clear() {
	if p.drawn {
		fmt.Fprintln(p.w)
		p.drawn = false
	}
}

// finish ends the bar's line.
func (p *progress) finish() { p.clear() }
