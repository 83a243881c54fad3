package gate

import "github.com/syncfilter/syncfilter/normalize"

// Walked spellings. Without a complete spellings table, a call asks
// SQLite about every spelling of its keys instead of reading the table's
// keys that may be spelled otherwise: normalize.Equivalents finds them
// from each key alone. A name has a few (each accented letter two to
// six, each 'K' two: "Nguyễn Thị Ánh Tuyết" 90), each one more key the
// confirmation looks up (about a microsecond), where the read costs
// O(rows). A call whose keys have more than walkPageMax other spellings
// together, or one key more than walkKeyMax spellings (or longer than
// normalize.MaxWalkBytes), takes the read.
const (
	walkKeyMax  = 1024 // spellings of one key
	walkPageMax = 8192 // other spellings of a call's keys together
)

// walk holds the spellings of a call's keys, found when first asked for.
type walk struct {
	keys   []string
	spells func(string) bool   // whether a key may have another spelling
	off    bool                // Knobs.NoWalk
	note   func()              // Knobs.Walk
	done   bool                // ok ran: fits and other hold its answer
	fits   bool                // every key walked within the limits
	other  map[string][]string // canonical key → its other spellings
}

// ok reports whether the spellings of the call's keys that may have
// another fit the limits (found, then, in w.other).
func (w *walk) ok() bool {
	if w == nil || w.off {
		return false
	}
	if !w.done {
		if w.note != nil {
			w.note()
		}
		w.done, w.fits, w.other = true, true, map[string][]string{}
		left := walkPageMax
		for _, k := range w.keys {
			if _, seen := w.other[k]; seen || !w.spells(k) {
				continue
			}
			eq, ok := normalize.Equivalents(k, min(walkKeyMax, left+1))
			if !ok {
				w.fits, w.other = false, nil
				break
			}
			w.other[k], left = eq[1:], left-(len(eq)-1)
		}
	}
	return w.fits
}
