package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
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
	exitCode := fs.Bool("exit-code", false, "exit with status 5 if any key is missing (with --version-column: needed)")
	verCol := fs.String("version-column", "", "the version `column`: read id<TAB>version lines and answer have or need (new or updated in --json)")
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
	ix, err := rebuild.Open(ctx, a.dbConfig(rebuild.DBConfig{Path: *db, ReadOnly: true, BusyTimeout: busy}),
		rebuild.Source{Table: *table, Column: *column, Snapshot: *snap, Compare: *compare, Version: *verCol})
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
	if *verCol != "" {
		v := &versioned{ctx: ctx, ix: ix, out: out}
		err = a.streamKeys(ctx, pos, *nul, v.batch)
		missingAny = v.needAny
	} else {
		err = a.streamKeys(ctx, pos, *nul, func(batch []key) error { return checkBatch(ctx, ix, out, batch, &missingAny) })
	}
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

// checkBatch answers one batch of keys by id.
func checkBatch(ctx context.Context, ix *rebuild.Index, out *output, batch []key, missingAny *bool) error {
	texts := make([]string, 0, len(batch))
	for _, k := range batch {
		if k.tooLong { // only its first bytes were kept: never ask about them
			texts = append(texts, "\xff")
			continue
		}
		texts = append(texts, k.text)
	}
	missing, err := ix.Missing(ctx, texts)
	bad, err := invalidKeys(err)
	if err != nil {
		return err
	}
	// One answer per position: every input line is answered on its own,
	// a repeated or differently spelled key included.
	for i, k := range batch {
		switch why, isBad := bad[i]; {
		case isBad:
			out.reject(k, why)
		case missing[i]:
			*missingAny = true
			out.answer(k.text, "missing")
		default:
			out.answer(k.text, "fetched")
		}
	}
	return out.w.Flush()
}

// invalidKeys returns the positions an *InvalidKeysError names, or err if
// it is another error.
func invalidKeys(err error) (map[int]error, error) {
	bad := map[int]error{}
	var ike *rebuild.InvalidKeysError
	if errors.As(err, &ike) {
		for _, ke := range ike.Keys {
			bad[ke.Index] = ke.Err
		}
		return bad, nil
	}
	return bad, err
}

// versioned answers id<TAB>version lines with Need. A version is sent as
// a string until the index says the column takes integers (a
// *rebuild.VersionError); then every version is parsed as one, and a
// line whose version is not an integer is answered "invalid".
type versioned struct {
	ctx     context.Context
	ix      *rebuild.Index
	out     *output
	ints    bool
	needAny bool
}

func (v *versioned) batch(batch []key) error {
	items := make([]rebuild.Item, 0, len(batch))
	at := make([]int, 0, len(batch)) // the batch position of each item
	bad := map[int]error{}
	for i, k := range batch {
		id, ver, ok := splitVersion(k.text)
		switch {
		case k.tooLong:
			bad[i] = fmt.Errorf("longer than %d bytes", maxKeyBytes)
			continue
		case !ok:
			bad[i] = errors.New("no version: want id<TAB>version")
			continue
		}
		var version any = ver
		if v.ints {
			n, err := strconv.ParseInt(ver, 10, 64)
			if err != nil {
				bad[i] = fmt.Errorf("version %q: the version column takes integers", ver)
				continue
			}
			version = n
		}
		items, at = append(items, rebuild.Item{ID: id, Version: version}), append(at, i)
	}
	needs, err := v.ix.Need(v.ctx, items)
	var ve *rebuild.VersionError
	if errors.As(err, &ve) && !v.ints {
		v.ints = true
		return v.batch(batch)
	}
	invalid, err := invalidKeys(err)
	if err != nil {
		return err
	}
	for j, i := range at {
		if why, isBad := invalid[j]; isBad {
			bad[i] = why
		}
	}
	j := 0
	for i, k := range batch {
		if why, isBad := bad[i]; isBad {
			v.out.reject(k, why)
			if j < len(at) && at[j] == i {
				j++
			}
			continue
		}
		n := needs[j]
		j++
		v.needAny = v.needAny || n != rebuild.Have
		v.out.need(k.text, n)
	}
	return v.out.w.Flush()
}

// splitVersion splits an id<TAB>version line at its last TAB (an id may
// hold one).
func splitVersion(line string) (id, version string, ok bool) {
	i := strings.LastIndexByte(line, '\t')
	if i < 0 {
		return line, "", false
	}
	return line[:i], line[i+1:], true
}
