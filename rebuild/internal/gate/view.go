package gate

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/syncfilter/syncfilter/rebuild/internal/store"
	"github.com/syncfilter/syncfilter/syncfilter"
)

// Mark is how far a view has read the log: every entry with seq <= Gen,
// the one at Gen tagged Tag (0: nothing to check there).
type Mark struct {
	Gen uint64
	Tag int64
}

// View is what a call may trust about one source in one file: a filter
// (nil for a view of the stored spellings alone) and the stored spellings
// that are not NFC, both caught up on the log to one mark; or, Walked,
// none: the call asks every spelling of its keys (walk.go).
type View struct {
	ID       uint64
	F        *syncfilter.Filter // nil: spellings only
	File     *File
	Src      *store.Source
	Epoch    uint64
	Capacity uint64        // keys F was sized for
	Rows     int64         // rows when it was built (0: loaded)
	Built    time.Time     // when it was built or loaded
	DV       store.Changes // unlogged sources: data_version when the table was read
	Walked   bool          // no spellings held: each call walks its keys' (true of any data, held for one file)

	mark atomic.Pointer[Mark]
	sp   sync.Map // canonical form → *[]string, its stored spellings: a list replaced, never changed
}

// NewView returns a view at mark m.
func NewView(f *syncfilter.Filter, file *File, src *store.Source, epoch uint64, m Mark) *View {
	v := &View{ID: NewID(), F: f, File: file, Src: src, Epoch: epoch, Built: time.Now()}
	v.mark.Store(&m)
	return v
}

// Mark returns how far the view has read the log.
func (v *View) Mark() Mark { return *v.mark.Load() }

// raise moves the mark to m if m is further.
func (v *View) raise(m Mark) bool {
	for {
		old := v.mark.Load()
		if old.Gen >= m.Gen {
			return false
		}
		if v.mark.CompareAndSwap(old, &m) {
			return true
		}
	}
}

// Spellings returns the stored spellings of a canonical key the view knows.
func (v *View) Spellings(canon string) []string {
	if l, ok := v.sp.Load(canon); ok {
		return *l.(*[]string)
	}
	return nil
}

// AllSpellings returns every spelling the view knows, as (canonical, stored).
func (v *View) AllSpellings() [][2]string {
	var out [][2]string
	v.sp.Range(func(c, l any) bool {
		for _, s := range *l.(*[]string) {
			out = append(out, [2]string{c.(string), s})
		}
		return true
	})
	return out
}

// AddSpellings notes stored spellings (canonical, stored): each key's
// list is replaced, so that readers take no lock, and a note costs the
// same however many spellings the view holds.
func (v *View) AddSpellings(pairs [][2]string) {
	for _, p := range pairs {
		old, loaded := v.sp.LoadOrStore(p[0], &[]string{p[1]})
		for loaded { // lists are replaced, never removed
			list := *old.(*[]string)
			if slices.Contains(list, p[1]) {
				break
			}
			next := slices.Clip(append(slices.Clip(list), p[1])) // no spare room: a caller's append copies
			if v.sp.CompareAndSwap(p[0], old, &next) {
				break
			}
			old, _ = v.sp.Load(p[0])
		}
	}
}

// Covers reports whether v is a view of src (as resolved in f) at epoch.
func (v *View) Covers(f *File, src *store.Source, epoch uint64) bool {
	return v.File == f && v.Src.ID == src.ID && v.Src.DatasetID == src.DatasetID && v.Epoch == epoch
}

// Close closes the view's filter, if it has one.
func (v *View) Close() {
	if v != nil && v.F != nil {
		_ = v.F.Close()
	}
}
