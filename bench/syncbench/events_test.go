package syncbench

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestEventsOfARefusedSnapshot: another database's snapshot is neither
// used nor replaced; the events say why and time the rebuild.
func TestEventsOfARefusedSnapshot(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path, snap := filepath.Join(dir, "app.db"), filepath.Join(dir, "app.db.sfb")
	if err := EmptyDB(ctx, path); err != nil {
		t.Fatal(err)
	}
	app, err := OpenApp(path)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	if _, err := app.Store(ctx, []string{"a", "b", "c"}); err != nil {
		t.Fatal(err)
	}
	if err := BuildLibSnapshot(ctx, DefaultDriver(), path, Table, snap); err != nil {
		t.Fatal(err)
	}
	// Another database's snapshot: a dataset of its own.
	other := filepath.Join(dir, "other.db")
	if err := EmptyDB(ctx, other); err != nil {
		t.Fatal(err)
	}
	if err := BuildLibSnapshot(ctx, DefaultDriver(), other, Table, other+".sfb"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(other+".sfb", snap); err != nil {
		t.Fatal(err)
	}
	lib, err := OpenLib(ctx, DefaultDriver(), path, snap, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer lib.Close(ctx)
	if err := lib.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	st := lib.Stats()
	if !st.Serving || st.Rebuilds != 1 || !strings.Contains(st.SnapshotError, "snapshot not used") ||
		!strings.Contains(st.SnapshotError, "snapshot path refused") || st.LastRebuildIn <= 0 {
		t.Errorf("stats %+v: want a rebuilt filter serving, both refusals and the rebuild's time", st)
	}
}

// TestEventsByTable: a database's events count for the collection they
// name and for the database.
func TestEventsByTable(t *testing.T) {
	ev := newLibEvents()
	log := ev.logger()
	log.With(slog.String("table", "a")).Info("filter due for a rebuild", "why", "full")
	log.With(slog.String("table", "a")).Info("rebuilt", slog.String("why", "full"), slog.Duration("took", time.Second))
	log.Info("filter dropped", slog.String("table", "b"), slog.Any("why", os.ErrNotExist))
	log.With(slog.String("table", "b")).Info("rebuild failed", slog.String("why", "x"), slog.Any("err", os.ErrPermission))
	a, b, all := ev.counts("a"), ev.counts("b"), ev.counts("")
	if a.Due != 1 || a.Rebuilt != 1 || a.LastRebuildIn != time.Second || a.Dropped != 0 {
		t.Errorf("a: %+v", a)
	}
	if b.Dropped != 1 || b.LastError != os.ErrPermission.Error() || b.Due != 0 {
		t.Errorf("b: %+v", b)
	}
	if all.Due != 1 || all.Dropped != 1 || all.Rebuilt != 1 || all.LastError == "" {
		t.Errorf("all: %+v", all)
	}
}
