package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/syncfilter/syncfilter/rebuild"
	"github.com/syncfilter/syncfilter/rebuild/ops"
	"github.com/syncfilter/syncfilter/snapshot"
)

func (a *app) query(ctx context.Context, args []string) error {
	fs := a.flags("query")
	nul := fs.Bool("0", false, "keys on stdin are NUL-separated; so are the output records")
	asJSON := fs.Bool("json", false, `print one JSON object per key: {"key": ..., "answer": ...}`)
	db := fs.String("db", "", "SQLite database `path` holding the key of the snapshot's positions (a version 2 snapshot is read only with it)")
	busy := 5 * time.Second
	fs.Var(duration{&busy}, "busy-timeout", "how long SQLite waits for a lock another connection (the app) holds, a duration `D` such as 30s")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef("want a snapshot FILE, then keys (or keys on stdin)")
	}
	// A large file is verified first, streaming: a forged header (say, a
	// sparse file claiming gigabytes) is refused before its bits are
	// allocated. The bits are then read again; small files are read once.
	if info, err := os.Stat(pos[0]); err == nil && info.Size() > 64<<20 {
		if _, _, _, err := snapshot.VerifyFile(pos[0]); err != nil {
			return err
		}
	}
	var s *snapshot.Snapshot
	if *db == "" {
		if s, err = snapshot.ReadFile(pos[0]); errors.Is(err, snapshot.ErrWrongKey) {
			err = fmt.Errorf("%w (give --db: the database holds the key)", err)
		}
	} else if err = checkDB(*db); err == nil {
		a.opens(*db, busy)
		s, err = ops.ReadSnapshot(ctx, a.dbConfig(rebuild.DBConfig{Path: *db, BusyTimeout: busy}), pos[0])
		err = explainReadOnly(*db, err)
	}
	if err != nil {
		return err
	}
	if err := s.CheckNormalization(); err != nil {
		return fmt.Errorf("%s is intact but unusable here: %w", pos[0], err)
	}
	out := &output{w: bufio.NewWriter(a.stdout), nul: *nul, json: *asJSON, log: a.log, cmd: "query"}
	maybe := make([]bool, 0, batchKeys)
	valid := make([]string, 0, batchKeys)
	err = a.streamKeys(ctx, pos[1:], *nul, func(batch []key) error {
		valid = valid[:0]
		bad := make(map[int]error)
		for i, k := range batch {
			if k.tooLong {
				bad[i] = nil
				continue
			}
			if _, err := s.Params.Compare.Form(k.text); err != nil {
				bad[i] = err
				continue
			}
			valid = append(valid, k.text)
		}
		var err error
		if maybe, err = s.Image.MightContainBatch(maybe[:0], valid); err != nil {
			return err
		}
		j := 0
		for i, k := range batch {
			if why, isBad := bad[i]; isBad {
				out.reject(k, why)
				continue
			}
			verdict := "absent"
			if maybe[j] {
				verdict = "maybe"
			}
			j++
			out.answer(k.text, verdict)
		}
		return out.w.Flush()
	})
	if err != nil {
		return err
	}
	return out.done()
}
