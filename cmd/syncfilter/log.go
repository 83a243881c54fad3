package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// logger writes the command's stderr lines. Off a terminal (cron, a
// service manager, a pipe) every line starts with an RFC 3339 UTC time,
// failures included; on a terminal lines are written as they are, and a
// progress bar drawn in place is ended before a line is written. Lines
// from several goroutines (a scan's progress, the command) never
// interleave. Once closed (the run's last line was written) it writes
// nothing more.
type logger struct {
	mu       sync.Mutex
	w        io.Writer
	terminal bool
	now      func() time.Time
	bar      bool // a progress bar is drawn on the current line
	closed   bool
}

func newLogger(w io.Writer, terminal bool) *logger {
	return &logger{w: w, terminal: terminal, now: time.Now}
}

// stamp is what starts a line off a terminal.
func (l *logger) stamp() string {
	if l.terminal {
		return ""
	}
	return l.now().UTC().Format(time.RFC3339) + " "
}

// printf writes one line (a trailing newline is added), or several if
// the text holds newlines: each is stamped.
func (l *logger) printf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.endBar()
	stamp := l.stamp()
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimSuffix(fmt.Sprintf(format, args...), "\n"), "\n") {
		b.WriteString(stamp)
		b.WriteString(line)
		b.WriteByte('\n')
	}
	_, _ = io.WriteString(l.w, b.String())
}

// draw replaces the progress bar's line with line (terminal only).
func (l *logger) draw(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	_, _ = io.WriteString(l.w, "\r"+line+"\x1b[K") // erase what a longer previous line left
	l.bar = true
}

// endBar ends the bar's line, if one is drawn; under mu.
func (l *logger) endBar() {
	if l.bar {
		_, _ = io.WriteString(l.w, "\n")
		l.bar = false
	}
}

// close ends the bar's line and stops every later line: called just
// before the run's last line (a summary on stdout) is written.
func (l *logger) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.endBar()
	l.closed = true
}
