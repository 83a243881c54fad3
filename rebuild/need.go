package rebuild

import (
	"context"
	"fmt"
	"math"

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

// Need is Need's answer about one Item.
type Need uint8

const (
	// Have: a row with an equal id holds a version >= the item's (as
	// SQLite compares them): nothing to fetch.
	Have Need = iota
	// NeedNew: no row with an equal id: fetch the record and insert it.
	NeedNew
	// NeedUpdate: rows with an equal id hold only older or NULL versions:
	// fetch the record and update it.
	NeedUpdate
)

func (n Need) String() string {
	switch n {
	case Have:
		return "have"
	case NeedNew:
		return "new"
	case NeedUpdate:
		return "updated"
	}
	return fmt.Sprintf("need(%d)", uint8(n))
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
func (ix *Index) Need(ctx context.Context, items []Item) ([]Need, error) {
	if !ix.k.G.Versioned() {
		return nil, fmt.Errorf("need: the source names no version column (Source.Version): %w", ErrBadConfig)
	}
	ids := make([]string, len(items))
	for i, it := range items {
		ids[i] = it.ID
	}
	p := newPage(ix.k.G, ids)
	var found, fresh []bool
	if err := ix.call(ctx, "need", func(c *gate.Call) error {
		vers, err := versionsOf(c.Src(), items, p.valid)
		if err != nil {
			return err
		}
		found, fresh, err = c.AnswerVersions(ctx, p.asked(), vers)
		return err
	}); err != nil {
		return nil, err
	}
	ix.k.G.C.Queries.Add(uint64(len(items)))
	out := make([]Need, len(items))
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
// TEXT.
func versionsOf(src *store.Source, items []Item, valid []int) ([]any, error) {
	want := "a string"
	if src != nil && src.VerInt {
		want = "an integer"
	}
	out := make([]any, len(valid))
	for j, i := range valid {
		v, ok := items[i].Version, false
		if want == "a string" {
			_, ok = v.(string)
		} else {
			v, ok = asInt64(v)
		}
		if !ok {
			return nil, &VersionError{Index: i, Version: items[i].Version, Want: want}
		}
		out[j] = v
	}
	return out, nil
}

// asInt64 converts any Go integer that fits an int64.
func asInt64(v any) (any, bool) {
	switch x := v.(type) {
	case int:
		return int64(x), true
	case int8:
		return int64(x), true
	case int16:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case uint8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case uint:
		return int64(x), uint64(x) <= math.MaxInt64
	case uint64:
		return int64(x), x <= math.MaxInt64
	}
	return nil, false
}
