package gate

import "github.com/syncfilter/syncfilter/normalize"

// Walked spellings. Without a complete spellings table, a call can ask
// SQLite about every spelling of its keys instead of reading the table's
// keys that may be spelled otherwise: normalize.Equivalents finds them
// from each key alone. A name has a handful (an accented letter two or
// three, a 'K' two), so a page asks a few more keys and reads nothing of
// the table; a key with more than walkLimit takes the read.

// walkLimit is the most spellings a key may have and be walked: each is
// one more key the confirmation looks up.
const walkLimit = 64

// walk holds the spellings of a call's keys, found when first asked for.
type walk struct {
	keys   []string
	spells func(string) bool
	done   bool
	fits   bool
	other  map[string][]string // canonical key → its other spellings
}

// ok reports whether every key of the call that may be spelled otherwise
// has at most walkLimit spellings (found, then, in w.other).
func (w *walk) ok() bool {
	if w == nil {
		return false
	}
	if !w.done {
		w.done, w.fits, w.other = true, true, map[string][]string{}
		for _, k := range w.keys {
			if _, seen := w.other[k]; seen || !w.spells(k) {
				continue
			}
			eq, ok := normalize.Equivalents(k, walkLimit)
			if !ok {
				w.fits, w.other = false, nil
				break
			}
			w.other[k] = eq[1:]
		}
	}
	return w.fits
}
