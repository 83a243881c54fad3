package syncbench

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// libEvents records the library's background events (rebuild.DBConfig.Logger)
// that the harness reports: its Stats do not carry them.
type libEvents struct {
	mu  sync.Mutex
	all eventCounts            // every collection of the database
	by  map[string]eventCounts // by the events' "table" attribute
}

// eventCounts are the events of one collection, or of a whole database.
type eventCounts struct {
	Rebuilt       uint64        // "rebuilt"
	Due           uint64        // "filter due for a rebuild": automatic rebuilds asked for
	Dropped       uint64        // "filter dropped"
	LastRebuildIn time.Duration // "rebuilt"'s took, of the last one
	NotUsed       string        // "snapshot not used": why
	PathRefused   string        // "snapshot path refused": why
	LastError     string        // "rebuild failed": err, of the last one
}

// snapshotError says why the snapshot was not used, or may not be saved.
func (c eventCounts) snapshotError() string {
	var out []string
	if c.NotUsed != "" {
		out = append(out, "snapshot not used: "+c.NotUsed)
	}
	if c.PathRefused != "" {
		out = append(out, "snapshot path refused: "+c.PathRefused)
	}
	return strings.Join(out, "; ")
}

func newLibEvents() *libEvents { return &libEvents{by: map[string]eventCounts{}} }

// logger returns the logger to give the library.
func (e *libEvents) logger() *slog.Logger { return slog.New(eventHandler{ev: e}) }

// counts returns the events of table ("": every collection).
func (e *libEvents) counts(table string) eventCounts {
	e.mu.Lock()
	defer e.mu.Unlock()
	if table == "" {
		return e.all
	}
	return e.by[table]
}

func (e *libEvents) record(table string, r slog.Record) {
	attrs := map[string]slog.Value{}
	r.Attrs(func(a slog.Attr) bool {
		attrs[a.Key] = a.Value.Resolve()
		return true
	})
	if v, ok := attrs["table"]; ok {
		table = v.String()
	}
	text := func(key string) string {
		v, ok := attrs[key]
		if !ok {
			return fmt.Sprintf("(no %s)", key)
		}
		if err, ok := v.Any().(error); ok {
			return err.Error()
		}
		return v.String()
	}
	apply := func(c *eventCounts) {
		switch r.Message {
		case "rebuilt":
			c.Rebuilt++
			if v := attrs["took"]; v.Kind() == slog.KindDuration {
				c.LastRebuildIn = v.Duration()
			}
		case "filter due for a rebuild":
			c.Due++
		case "filter dropped":
			c.Dropped++
		case "snapshot not used":
			c.NotUsed = text("why")
		case "snapshot path refused":
			c.PathRefused = text("why")
		case "rebuild failed":
			c.LastError = text("err")
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	apply(&e.all)
	c := e.by[table]
	apply(&c)
	e.by[table] = c
}

// eventHandler is the slog.Handler behind libEvents' logger; table is
// the "table" attribute the library's With gave it.
type eventHandler struct {
	ev    *libEvents
	table string
}

func (h eventHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }

func (h eventHandler) Handle(_ context.Context, r slog.Record) error {
	h.ev.record(h.table, r)
	return nil
}

func (h eventHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	for _, a := range attrs {
		if a.Key == "table" {
			h.table = a.Value.Resolve().String()
		}
	}
	return h
}

func (h eventHandler) WithGroup(string) slog.Handler { return h }
