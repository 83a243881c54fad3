package rebuild

import (
	"strconv"
	"strings"

	"github.com/syncfilter/syncfilter/rebuild/internal/gate"
	"github.com/syncfilter/syncfilter/rebuild/internal/store"
	"github.com/syncfilter/syncfilter/syncfilter"
)

// The errors a sync engine meets, each wrapped with context ("verb noun:
// %w"); test with errors.Is. SQLite's errors come wrapped as the app's
// driver reports them. The operator's (a snapshot refused, Detach's) are
// in package rebuild/ops.
var (
	// ErrBadConfig: a DBConfig or Source field is out of range, a name is
	// not a plain SQL identifier, DBConfig.DB is not a handle on Path,
	// SQLite reads the file as no database (an encrypted one: a wrong or
	// missing key in DBConfig.ConnParams), or the call does not fit the
	// configuration (a write on a read-only database, MarkFetched on the
	// app's own table, a Source.Compare other than the one the database
	// records for the source).
	ErrBadConfig = store.ErrBadConfig

	// ErrNoSource: the source table or its key column does not exist.
	ErrNoSource = store.ErrNoSource

	// ErrNotIndexed: a lookup would scan the table: index the key column,
	// or set Source.AllowUnindexed.
	ErrNotIndexed = store.ErrNotIndexed

	// ErrInexactColumn: the key column cannot answer "was this id stored?"
	// exactly (not TEXT affinity, not BINARY collation, generated, or the
	// database stores UTF-16). No opt-out.
	ErrInexactColumn = store.ErrInexactColumn

	// ErrHardLinked: the database file has more than one name; writes
	// through two names corrupt it.
	ErrHardLinked = store.ErrHardLinked

	// ErrReplaced: the file at the path is not the one opened, and no
	// database can be opened there now.
	ErrReplaced = store.ErrReplaced

	// ErrClosed: the index or database was closed.
	ErrClosed = store.ErrClosed

	// ErrSuspended: the database is suspended (Rebuild, Save), or Suspend
	// interrupted the app's Rebuild.
	ErrSuspended = store.ErrSuspended

	// ErrNotServing: no filter serves (Wait says why; Save has nothing to
	// save). Calls are still answered exactly, from SQLite.
	ErrNotServing = store.ErrNotServing

	// ErrUnsupportedDriver: no driver given and no default in this build,
	// a driver the library does not support, or a SQLite too old.
	ErrUnsupportedDriver = store.ErrUnsupportedDriver

	// ErrSecondSQLite: no driver given while the program links another
	// copy of SQLite: two copies in one process corrupt the database.
	ErrSecondSQLite = store.ErrSecondSQLite
)

// InvalidKeysError lists the keys of a page that cannot be compared (not
// valid UTF-8, or longer than 64 KiB): Missing answers them missing and
// every other key as usual.
type InvalidKeysError struct {
	Keys []*syncfilter.KeyError // in input order; Index is the position in the page
}

func (e *InvalidKeysError) Error() string {
	var b strings.Builder
	b.WriteString(strconv.Itoa(len(e.Keys)) + " invalid key(s): ")
	for i, k := range e.Keys {
		if i == 3 {
			b.WriteString("; ...")
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(k.Error())
	}
	return b.String()
}

// Unwrap returns the keys' errors (normalize.ErrInvalidUTF8, or too long).
func (e *InvalidKeysError) Unwrap() []error {
	errs := make([]error, len(e.Keys))
	for i, k := range e.Keys {
		errs[i] = k
	}
	return errs
}

// page is one Missing call's keys: their canonical forms and the invalid
// ones.
type page struct {
	canon []string // of each key; "" for an invalid one
	valid []int    // positions of the valid keys
	bad   *InvalidKeysError
}

func newPage(g *gate.Gate, keys []string) *page {
	p := &page{canon: make([]string, len(keys)), valid: make([]int, 0, len(keys))}
	for i, k := range keys {
		c, err := g.Canonical(k)
		if err != nil {
			if p.bad == nil {
				p.bad = &InvalidKeysError{}
			}
			p.bad.Keys = append(p.bad.Keys, &syncfilter.KeyError{Index: i, Err: err})
			continue
		}
		p.canon[i] = c
		p.valid = append(p.valid, i)
	}
	return p
}

// asked returns the canonical forms of the valid keys, in order.
func (p *page) asked() []string {
	if p.bad == nil {
		return p.canon
	}
	out := make([]string, len(p.valid))
	for j, i := range p.valid {
		out[j] = p.canon[i]
	}
	return out
}

// missing answers each position: true where the key was not found (found
// answers asked) or is invalid.
func (p *page) missing(found []bool) []bool {
	out := make([]bool, len(p.canon))
	for i := range out {
		out[i] = true
	}
	for j, i := range p.valid {
		out[i] = !found[j]
	}
	return out
}
