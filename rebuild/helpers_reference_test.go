package rebuild

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"golang.org/x/text/unicode/norm"
)

// The reference the concurrency tests judge answers against: what was
// committed to a table, id by id, by inserters that record each id's
// state, and probes that judge every answer against the states before
// and after the call.

// spelled is an id as stored and its other spellings.
type spelled struct {
	stored string
	forms  []string // every spelling a query may use: NFC, NFD, the stored one
}

// idSpelling returns the i-th id of a family: a third stored in NFD (an
// "é" decomposed), a third in NFC, and every seventh with a KELVIN SIGN
// (U+212A), whose NFC (and NFD) is the ASCII "K"; the rest ASCII.
func idSpelling(family string, i int) spelled {
	var stored string
	switch {
	case i%7 == 3:
		stored = fmt.Sprintf("\u212Aelvin-%s-%06d", family, i)
	case i%3 == 0:
		stored = norm.NFD.String(fmt.Sprintf("café-%s-%06d", family, i))
	case i%3 == 1:
		stored = fmt.Sprintf("café-%s-%06d", family, i) // NFC as typed
	default:
		stored = fmt.Sprintf("plain-%s-%06d", family, i)
	}
	forms := []string{stored}
	for _, f := range []string{norm.NFC.String(stored), norm.NFD.String(stored)} {
		if !contains(forms, f) {
			forms = append(forms, f)
		}
	}
	return spelled{stored: stored, forms: forms}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// reference is what the test committed to one table, id by id: 0 never
// inserted, 1 being inserted (the transaction may or may not have
// committed), 2 committed. An answer is judged against the states before
// and after the call: committed before → must be fetched; still never
// inserted after → must be missing; anything else may go either way.
type reference struct {
	family string
	state  []atomic.Int32
	next   atomic.Int64 // ids handed to inserters so far
}

func newReference(family string, n int) *reference {
	return &reference{family: family, state: make([]atomic.Int32, n)}
}

func (r *reference) id(i int) spelled { return idSpelling(r.family, i) }

// committed marks ids [from, to) as committed without an inserter (seed
// rows, rows a child process committed before the call).
func (r *reference) committed(from, to int) {
	for i := from; to > i; i++ {
		r.state[i].Store(2)
	}
	for {
		n := r.next.Load()
		if int64(to) <= n || r.next.CompareAndSwap(n, int64(to)) {
			return
		}
	}
}

// take hands the next n ids to an inserter, marked as being inserted; nil
// when the reference is full.
func (r *reference) take(n int) []int {
	start := int(r.next.Add(int64(n))) - n
	if start+n > len(r.state) {
		return nil
	}
	out := make([]int, n)
	for j := range out {
		out[j] = start + j
		r.state[start+j].Store(1)
	}
	return out
}

// verdict checks one answer: i's state before the call and the answer.
func (r *reference) verdict(i int, before int32, fetched bool) error {
	after := r.state[i].Load()
	switch {
	case before == 2 && !fetched:
		return fmt.Errorf("%s id %d (%+q) was committed before the call and answered not fetched", r.family, i, r.id(i).stored)
	case after == 0 && fetched:
		return fmt.Errorf("%s id %d (%+q) was never inserted and answered fetched", r.family, i, r.id(i).stored)
	}
	return nil
}

// inserter commits the reference's ids into table on its own connection,
// batch ids per transaction, until stop is closed or the reference is
// full; it counts its commits. It pauses between commits: an app that
// writes without a pause starves every other writer in a rollback-journal
// mode (SQLite's locks are not fair), whoever they are.
func inserter(db *sql.DB, table string, ref *reference, batch int, pause time.Duration, stop <-chan struct{}, commits *atomic.Int64, errs chan<- error) {
	for {
		select {
		case <-stop:
			return
		case <-time.After(pause):
		}
		list := ref.take(batch)
		if list == nil {
			return
		}
		keys := make([]string, len(list))
		for j, i := range list {
			keys[j] = ref.id(i).stored
		}
		if err := tryInsert(db, table, keys...); err != nil {
			errs <- fmt.Errorf("inserter of %s: %w", table, err)
			return
		}
		for _, i := range list {
			ref.state[i].Store(2)
		}
		commits.Add(1)
	}
}

// probe asks about a random sample of the reference's ids (in random
// spellings, some ids named twice or more) and never-inserted ids, through
// Missing or Fetched, and judges every answer.
type probe struct {
	ref    *reference
	keys   []string
	idx    []int // reference index, or -1 for a never-inserted id
	before []int32
}

func newProbe(ref *reference, pick func(n int) int, n int) *probe {
	p := &probe{ref: ref}
	limit := int(min(ref.next.Load()+50, int64(len(ref.state))))
	for range n {
		if pick(8) == 0 {
			p.keys = append(p.keys, fmt.Sprintf("never-%s-%d-%s", ref.family, pick(1<<30), norm.NFD.String("é")))
			p.idx = append(p.idx, -1)
			p.before = append(p.before, 0)
			continue
		}
		i := pick(limit)
		if len(p.idx) > 0 && pick(8) == 0 {
			// An id the page names already, in any of its spellings:
			// every position is answered on its own.
			if j := p.idx[pick(len(p.idx))]; j >= 0 {
				i = j
			}
		}
		forms := ref.id(i).forms
		p.keys = append(p.keys, forms[pick(len(forms))])
		p.idx = append(p.idx, i)
		p.before = append(p.before, ref.state[i].Load())
	}
	return p
}

// judgeMissing checks Missing's answers, one per position of p.keys.
func (p *probe) judgeMissing(missing []bool) []error {
	if len(missing) != len(p.keys) {
		return []error{fmt.Errorf("Missing answered %d positions of %d", len(missing), len(p.keys))}
	}
	var errs []error
	for j, k := range p.keys {
		if p.idx[j] < 0 {
			if !missing[j] {
				errs = append(errs, fmt.Errorf("never-inserted %+q answered fetched by Missing", k))
			}
			continue
		}
		if err := p.ref.verdict(p.idx[j], p.before[j], !missing[j]); err != nil {
			errs = append(errs, fmt.Errorf("Missing(%+q): %w", k, err))
		}
	}
	return errs
}

// judgeFetched checks one Fetched answer, about p.keys[j].
func (p *probe) judgeFetched(j int, got bool) error {
	if p.idx[j] < 0 {
		if got {
			return fmt.Errorf("Fetched(%+q) of a never-inserted id = true", p.keys[j])
		}
		return nil
	}
	if err := p.ref.verdict(p.idx[j], p.before[j], got); err != nil {
		return fmt.Errorf("Fetched(%+q): %w", p.keys[j], err)
	}
	return nil
}

// newRand returns a generator seeded with seed (reproducible runs).
func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x5eed)) }
