package main

import (
	"bufio"
	"context"
	"errors"
	"time"

	"github.com/syncfilter/syncfilter/rebuild"
)

func (a *app) check(ctx context.Context, args []string) error {
	fs := a.flags("check")
	db, table, column := sourceFlags(fs)
	compare := compareFlag(fs)
	snap := fs.String("snapshot", "", "snapshot `file` to load, verify and catch up (without it, SQLite answers alone)")
	nul := fs.Bool("0", false, "keys on stdin are NUL-separated; so are the output records")
	asJSON := fs.Bool("json", false, `print one JSON object per key: {"key": ..., "answer": ...}`)
	exitCode := fs.Bool("exit-code", false, "exit with status 5 if any key is missing")
	busy := 5 * time.Second
	fs.Var(duration{&busy}, "busy-timeout", "how long SQLite waits for a lock another connection (the app) holds, a duration `D` such as 30s")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := required(fs, "db", "table", "column"); err != nil {
		return err
	}
	if err := checkDB(*db); err != nil {
		return err
	}
	a.opens(*db, busy)
	// Read-only: check changes nothing in the database or on disk.
	ix, err := rebuild.Open(ctx, rebuild.DBConfig{Path: *db, ReadOnly: true, BusyTimeout: busy},
		rebuild.Source{Table: *table, Column: *column, Snapshot: *snap, Compare: *compare})
	if err != nil {
		return explainReadOnly(*db, err)
	}
	defer ix.Close(context.WithoutCancel(ctx))
	var werr error
	if *snap != "" {
		werr = ix.Wait(ctx) // the snapshot loads in the background; Wait says why it does not serve
	}
	switch st := ix.Stats(); {
	case !st.Attached:
		a.log.printf("syncfilter check: no filter attached to %s.%s; answering from SQLite alone", *table, *column)
	case *snap != "" && werr != nil:
		a.log.printf("syncfilter check: snapshot not used, answering from SQLite: %s", oneLine(werr.Error()))
	}
	out := &output{w: bufio.NewWriter(a.stdout), nul: *nul, json: *asJSON, log: a.log, cmd: "check"}
	missingAny := false
	texts := make([]string, 0, batchKeys)
	err = a.streamKeys(ctx, pos, *nul, func(batch []key) error {
		texts = texts[:0]
		for _, k := range batch {
			if k.tooLong { // only its first bytes were kept: never ask about them
				texts = append(texts, "\xff")
				continue
			}
			texts = append(texts, k.text)
		}
		missing, err := ix.Missing(ctx, texts)
		bad := map[int]error{}
		var ike *rebuild.InvalidKeysError
		if errors.As(err, &ike) {
			for _, ke := range ike.Keys {
				bad[ke.Index] = ke.Err
			}
		} else if err != nil {
			return err
		}
		// One answer per position: every input line is answered on its
		// own, a repeated or differently spelled key included.
		for i, k := range batch {
			switch why, isBad := bad[i]; {
			case isBad:
				out.reject(k, why)
			case missing[i]:
				missingAny = true
				out.answer(k.text, "missing")
			default:
				out.answer(k.text, "fetched")
			}
		}
		return out.w.Flush()
	})
	if err != nil {
		return err
	}
	if err := out.done(); err != nil {
		return err
	}
	if *exitCode && missingAny {
		return &exitError{code: exitMissing}
	}
	return nil
}
