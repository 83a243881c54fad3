package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/syncfilter/syncfilter/rebuild"
)

// statusJSON is the JSON form of `status --json`. The names are a
// contract: scripts read them.
type statusJSON struct {
	Table      string        `json:"table"`
	Column     string        `json:"column"`
	Attached   bool          `json:"attached"`
	DatasetID  string        `json:"dataset_id,omitempty"`
	Rows       int64         `json:"rows"`
	Generation uint64        `json:"generation"`
	LogFloor   uint64        `json:"log_floor"`
	LogEntries int64         `json:"log_entries"`
	Aliases    int64         `json:"aliases"`
	Triggers   int           `json:"triggers"`
	Records    int64         `json:"snapshot_records"`
	Snapshot   *snapshotJSON `json:"snapshot,omitempty"`
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
	snap := fs.String("snapshot", "", "snapshot `file` to judge against the database")
	fpr := 0.01
	fs.Var(fraction{&fpr}, "fpr", "target false-positive `rate` that RebuildDue is judged against")
	busy := 5 * time.Second
	fs.Var(duration{&busy}, "busy-timeout", "how long SQLite waits for a lock another connection (the app) holds, a duration `D` such as 30s")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := exactly(pos, 0, "no arguments besides flags"); err != nil {
		return err
	}
	if err := required(fs, "db", "table", "column"); err != nil {
		return err
	}
	if err := checkDB(*db); err != nil {
		return err
	}
	a.opens(*db, busy)
	st, err := rebuild.Describe(ctx, rebuild.Config{Path: *db, Table: *table, Column: *column, Snapshot: *snap, FPR: fpr, BusyTimeout: busy})
	if err != nil {
		return explainReadOnly(*db, err)
	}
	out := statusJSON{Table: st.Table, Column: st.Column, Attached: st.Attached, Rows: st.Rows, Generation: st.Generation,
		LogFloor: st.LogFloor, LogEntries: st.LogEntries, Aliases: st.Aliases, Triggers: st.Triggers, Records: st.Records}
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
	if *asJSON {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	w := a.stdout
	fmt.Fprintf(w, "source          %s.%s in %s, %d rows\n", out.Table, out.Column, *db, out.Rows)
	if !out.Attached {
		fmt.Fprintf(w, "attached        no: the library has no complete record of this source (syncfilter rebuild attaches it)\n")
	} else {
		fmt.Fprintf(w, "attached        yes, dataset %s\n", out.DatasetID)
		fmt.Fprintf(w, "triggers        %d of 2 present\n", out.Triggers)
		fmt.Fprintf(w, "log             generation %d, %d entries kept, compacted up to %d\n", out.Generation, out.LogEntries, out.LogFloor)
		fmt.Fprintf(w, "aliases         %d stored non-NFC spellings\n", out.Aliases)
		fmt.Fprintf(w, "records         %d snapshot(s) vouched for\n", out.Records)
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
	return nil
}
