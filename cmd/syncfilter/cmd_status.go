package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/syncfilter/syncfilter/rebuild"
	"github.com/syncfilter/syncfilter/rebuild/ops"
)

// statusJSON is the JSON form of `status --json`. The names are a
// contract: scripts read them.
type statusJSON struct {
	Table      string        `json:"table"`
	Column     string        `json:"column"`
	Attached   bool          `json:"attached"`
	Compare    string        `json:"compare"` // how ids compare: canonical or bytes
	DatasetID  string        `json:"dataset_id,omitempty"`
	Rows       int64         `json:"rows"`
	Generation uint64        `json:"generation"`
	LogFloor   uint64        `json:"log_floor"`
	LogEntries int64         `json:"log_entries"`
	Spellings  int64         `json:"spellings"`
	Triggers   int           `json:"triggers"`
	Records    int64         `json:"snapshot_records"`
	Snapshot   *snapshotJSON `json:"snapshot,omitempty"`

	// With --all only: the snapshot rebuild --all writes for a source
	// with none recorded, and why a source could not be described.
	DefaultSnapshot string `json:"default_snapshot,omitempty"`
	Error           string `json:"error,omitempty"`
}

type snapshotJSON struct {
	Path          string  `json:"path"`
	Compatible    bool    `json:"compatible"`
	Reason        string  `json:"reason,omitempty"`
	Generation    uint64  `json:"generation"`
	GenerationLag uint64  `json:"generation_lag"`
	Items         uint64  `json:"items"`
	Capacity      uint64  `json:"capacity"`
	FillRatio     float64 `json:"fill_ratio"`
	EstimatedFPR  float64 `json:"estimated_fpr"`
	RebuildDue    bool    `json:"rebuild_due"`
	Bytes         int64   `json:"bytes"`
}

func (a *app) status(ctx context.Context, args []string) error {
	fs := a.flags("status")
	db, table, column := sourceFlags(fs)
	compare := compareFlag(fs)
	snap := fs.String("snapshot", "", "snapshot `file` to judge against the database")
	all := fs.Bool("all", false, "every source the database lists, each with the snapshot its last save recorded; instead of --table, --column and --snapshot")
	fpr := 0.01
	fs.Var(fraction{&fpr}, "fpr", "target false-positive `rate` that RebuildDue is judged against")
	busy := 5 * time.Second
	fs.Var(duration{&busy}, "busy-timeout", "how long SQLite waits for a lock another connection (the app) holds, a duration `D` such as 30s")
	asJSON := fs.Bool("json", false, "print JSON (with --all: a list, one object per source)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := exactly(pos, 0, "no arguments besides flags"); err != nil {
		return err
	}
	if err := allOrOne(fs, *all, []string{"table", "column", "snapshot", "compare"}, []string{"db", "table", "column"},
		"shows every source, each with its recorded snapshot", "for every source the database lists"); err != nil {
		return err
	}
	if err := checkDB(*db); err != nil {
		return err
	}
	a.opens(*db, busy)
	if *all {
		return a.statusAll(ctx, *db, fpr, busy, *asJSON)
	}
	out, err := describe(ctx, a.dbConfig(rebuild.DBConfig{Path: *db, BusyTimeout: busy}), rebuild.Source{Table: *table, Column: *column, Snapshot: *snap, FPR: fpr, Compare: *compare})
	if err != nil {
		return explainReadOnly(*db, err)
	}
	if *asJSON {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	printStatus(a.stdout, out, *db)
	return nil
}

// statusAll shows every source the database lists (read-only), each with
// the snapshot its last save recorded. A source that cannot be described
// is shown with its error, and the others still are; the exit status
// says whether any failed.
func (a *app) statusAll(ctx context.Context, db string, fpr float64, busy time.Duration, asJSON bool) error {
	list, err := ops.Sources(ctx, a.dbConfig(rebuild.DBConfig{Path: db, BusyTimeout: busy}))
	if err != nil {
		return explainReadOnly(db, err)
	}
	outs := make([]statusJSON, len(list))
	failed := 0
	for i, src := range list {
		k := keyOf(src.Table, src.Column)
		out, err := describe(ctx, a.dbConfig(rebuild.DBConfig{Path: db, BusyTimeout: busy}), rebuild.Source{Table: src.Table, Column: src.Column, Snapshot: src.Snapshot, FPR: fpr, Compare: src.Compare})
		if err != nil {
			if errors.Is(err, context.Canceled) {
				return err
			}
			failed++
			out = statusJSON{Table: k.table, Column: k.column, Error: oneLine(explainReadOnly(db, err).Error())}
		}
		out.Table, out.Column = k.table, k.column // the library's own table, too, by its SQL name
		if src.Snapshot == "" {
			out.DefaultSnapshot = ops.DefaultSnapshot(db, src.Table, src.Column)
		}
		outs[i] = out
	}
	var status error
	if failed > 0 {
		status = &exitError{code: exitFailure, msg: fmt.Sprintf("%d of %d sources could not be described", failed, len(list))}
	}
	if asJSON {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(outs); err != nil {
			return err
		}
		return status
	}
	if len(outs) == 0 {
		fmt.Fprintf(a.stdout, "no source is attached in %s\n", db)
	}
	for i, out := range outs {
		if i > 0 {
			fmt.Fprintln(a.stdout)
		}
		printStatus(a.stdout, out, db)
	}
	return status
}

// describe is the status of one source (ops.Describe, read-only).
func describe(ctx context.Context, db rebuild.DBConfig, src rebuild.Source) (statusJSON, error) {
	st, err := ops.Describe(ctx, db, src)
	if err != nil {
		return statusJSON{}, err
	}
	out := statusJSON{Table: st.Table, Column: st.Column, Attached: st.Attached, Compare: src.Compare.String(), Rows: st.Rows, Generation: st.Generation,
		LogFloor: st.LogFloor, LogEntries: st.LogEntries, Spellings: st.Spellings, Triggers: st.Triggers, Records: st.Records}
	if st.Attached {
		out.DatasetID = hex.EncodeToString(st.DatasetID[:])
	}
	if s := st.Snapshot; s != nil {
		out.Snapshot = &snapshotJSON{Path: s.Path, Compatible: s.Usable, Generation: s.Generation, GenerationLag: s.Lag,
			Items: s.Items, Capacity: s.Capacity, FillRatio: s.FillRatio, EstimatedFPR: s.EstimatedFPR, RebuildDue: s.RebuildDue, Bytes: s.Bytes}
		if s.Reason != nil {
			out.Snapshot.Reason = oneLine(s.Reason.Error())
		}
	}
	return out, nil
}

// printStatus writes one source's status as text.
func printStatus(w io.Writer, out statusJSON, db string) {
	fmt.Fprintf(w, "source          %s.%s in %s, %d rows\n", out.Table, out.Column, db, out.Rows)
	if out.Error != "" {
		fmt.Fprintf(w, "error           %s\n", out.Error)
		return
	}
	if !out.Attached {
		fmt.Fprintf(w, "attached        no: the library has no complete record of this source (syncfilter rebuild attaches it)\n")
	} else {
		fmt.Fprintf(w, "attached        yes, dataset %s, ids compared %s\n", out.DatasetID, out.Compare)
		fmt.Fprintf(w, "triggers        %d of 2 present\n", out.Triggers)
		fmt.Fprintf(w, "log             generation %d, %d entries kept, compacted up to %d\n", out.Generation, out.LogEntries, out.LogFloor)
		fmt.Fprintf(w, "spellings       %d stored non-NFC spellings\n", out.Spellings)
		fmt.Fprintf(w, "records         %d snapshot(s) vouched for\n", out.Records)
	}
	if out.DefaultSnapshot != "" {
		fmt.Fprintf(w, "snapshot        none recorded (rebuild --all writes %s)\n", out.DefaultSnapshot)
	}
	if s := out.Snapshot; s != nil {
		verdict := "usable"
		if !s.Compatible {
			verdict = "not usable: " + s.Reason
		}
		fmt.Fprintf(w, "snapshot        %s: %s\n", s.Path, verdict)
		if s.Bytes > 0 {
			fmt.Fprintf(w, "  generation    %d (%d behind the log)\n", s.Generation, s.GenerationLag)
			fmt.Fprintf(w, "  health        fill %.1f%%, estimated false-positive rate %.3g%%, %d items, sized for %d\n",
				100*s.FillRatio, 100*s.EstimatedFPR, s.Items, s.Capacity)
			fmt.Fprintf(w, "  rebuild due   %v\n", s.RebuildDue)
		}
	}
}
