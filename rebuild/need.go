package rebuild

import (
	"context"
	"fmt"
	"math"
	"reflect"

	"github.com/syncfilter/syncfilter/rebuild/internal/gate"
	"github.com/syncfilter/syncfilter/rebuild/internal/store"
)

// Item is one entry of a server's page that lists versions: a record's
// id and the version the server holds.
type Item struct {
	ID string
	// Version is an integer (any Go integer type) for an INTEGER version
	// column, a string for a TEXT one.
	Version any
}

// Verdict is Need's answer about one Item. The zero Verdict is no
// answer: Need never returns it.
type Verdict uint8

const (
	// NeedNew: no row with an equal id: fetch the record and insert it.
	NeedNew Verdict = iota + 1
	// NeedUpdate: rows with an equal id hold only older versions (or
	// NULL, or a value not of the column's type): fetch the record and
	// update it.
	NeedUpdate
	// Have: a row with an equal id holds a version of the column's type
	// at least the item's (integers as numbers, texts byte by byte):
	// nothing to fetch.
	Have
)

func (v Verdict) String() string {
	switch v {
	case NeedNew:
		return "new"
	case NeedUpdate:
		return "updated"
	case Have:
		return "have"
	}
	return fmt.Sprintf("verdict(%d)", uint8(v))
}

// VersionError names an item whose version is not of the version
// column's type (an integer for INTEGER, a string for TEXT): Need answers
// nothing.
type VersionError struct {
	Index   int    // the position in the page
	Version any    // as given
	Want    string // "an integer" or "a string"
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("item %d: version %v (%T), the version column takes %s", e.Index, e.Version, e.Version, e.Want)
}

// Need answers, for each item of a page, whether the record must be
// fetched: Have when a row with an equal id (in the source's Compare)
// holds a version at least the item's, else NeedNew (no such row) or
// NeedUpdate (rows only at older or NULL versions). It needs
// Source.Version. The filter rules out never-stored ids without SQLite;
// every maybe is confirmed with its stored versions in one statement. A
// page that repeats an id, or names it in two spellings, is answered per
// position; an id that cannot be compared is answered NeedNew and named
// in an *InvalidKeysError (a partial answer, as Missing's); a version of
// the wrong type is a *VersionError and nothing is answered.
func (ix *Index) Need(ctx context.Context, items []Item) ([]Verdict, error) {
	if !ix.k.G.Versioned() {
		return nil, fmt.Errorf("need: the source names no version column (Source.Version): %w", ErrBadConfig)
	}
	ids := make([]string, len(items))
	for i, it := range items {
		ids[i] = it.ID
	}
	p := newPage(ix.k.G, ids)
	var found, fresh []bool
	typed := func(src *store.Source) ([]any, error) { return versionsOf(src, items, p.valid) }
	if err := ix.call(ctx, "need", func(c *gate.Call) (err error) {
		found, fresh, err = c.AnswerVersions(ctx, p.asked(), typed)
		return err
	}); err != nil {
		return nil, err
	}
	ix.k.G.C.Queries.Add(uint64(len(items)))
	out := make([]Verdict, len(items))
	for i := range out {
		out[i] = NeedNew
	}
	for j, i := range p.valid {
		switch {
		case fresh[j]:
			out[i] = Have
		case found[j]:
			out[i] = NeedUpdate
		}
	}
	if p.bad != nil {
		ix.k.G.C.Invalid.Add(uint64(len(p.bad.Keys)))
		return out, fmt.Errorf("need: %w", p.bad)
	}
	return out, nil
}

// versionsOf returns the versions of the items at positions valid, as
// the source's version column takes them: int64 for INTEGER, string for
// TEXT (named types too), or the column's own refusal (src.VersionErr).
// Without a source either type is taken.
func versionsOf(src *store.Source, items []Item, valid []int) ([]any, error) {
	wantInt, wantStr, want := true, true, "an integer or a string"
	switch {
	case src == nil:
	case src.VersionErr != nil:
		return nil, src.VersionErr
	case src.VerInt:
		wantStr, want = false, "an integer"
	default:
		wantInt, want = false, "a string"
	}
	out := make([]any, len(valid))
	for j, i := range valid {
		v, ok := versionValue(items[i].Version, wantInt, wantStr)
		if !ok {
			return nil, &VersionError{Index: i, Version: items[i].Version, Want: want}
		}
		out[j] = v
	}
	return out, nil
}

// versionValue converts an integer that fits an int64 (if wantInt) or a
// string (if wantStr), of any named type.
func versionValue(v any, wantInt, wantStr bool) (any, bool) {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int(), wantInt
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return int64(rv.Uint()), wantInt && rv.Uint() <= math.MaxInt64
	case reflect.String:
		return rv.String(), wantStr
	}
	return nil, false
}
