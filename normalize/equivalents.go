package normalize

import (
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Equivalents: every spelling of a key, found from the key alone.
//
// Two valid strings are one key when their full canonical decompositions,
// each put in canonical order, are equal. So a spelling s of a canonical
// key k is a sequence of code points whose decompositions, joined, give
// one of the orderings of k's decomposition that canonical ordering takes
// back to it: in each run of non-starters, any order that keeps the marks
// of one class in their order. Equivalents walks those orderings and, in
// each, every way to cut it into pieces where a piece is a code point of
// the ordering or the decomposition of another code point (the table of
// decompose.go read backwards, once per process). Each spelling is found once, as one
// ordering cut one way. With tables newer than the pin, a code point
// unassigned in it is a cut that c keeps as it is (pinned.go), and each
// spelling is checked with String before it is returned.

// Equivalents returns every valid UTF-8 string whose canonical form is
// key, which must be canonical (c(key) == key), key itself first; false
// when there are more than limit (at least 1; above MaxEquivalents,
// MaxEquivalents) of them, when key is not canonical, or when it is
// longer than MaxWalkBytes. Its cost is bounded by the key's length and
// limit: a key's count of orderings is checked in one pass before any is
// walked.
func Equivalents(key string, limit int) ([]string, bool) {
	if len(key) > MaxWalkBytes || limit < 1 || !IsCanonical(key) {
		return nil, false
	}
	limit = min(limit, MaxEquivalents)
	if quickCanonical(key) && !mayRespell(key) {
		return []string{key}, true
	}
	inv := inverse()
	// Cut the decomposition where no piece can span the cut (before a
	// starter that no decomposition holds after its first code point):
	// the spellings are every choice of one spelling per part.
	d := decompose(key)
	if orderings(d, limit) > limit {
		return nil, false
	}
	var parts [][]string
	var fixed []byte // code points with no other spelling, not yet a part
	total := 1
	for i := 0; i < len(d); {
		j := i + 1
		for j < len(d) && (d[j].ccc != 0 || inv.joins[d[j].r]) {
			j++
		}
		var alts []string
		switch {
		case j == i+1 && inv.singles[d[i].r] == nil:
			fixed = utf8.AppendRune(fixed, d[i].r)
			i = j
			continue
		case j == i+1: // a starter alone: itself, or a code point that stands for it
			alts = inv.singles[d[i].r]
		default:
			e := walker{inv: inv.pieces, limit: limit}
			e.orders(d[i:j], 0, make([]rune, 0, j-i))
			if e.over {
				return nil, false
			}
			alts = e.out
		}
		if len(alts) > limit/total {
			return nil, false
		}
		total *= len(alts)
		if len(fixed) > 0 {
			parts, fixed = append(parts, []string{string(fixed)}), fixed[:0]
		}
		parts = append(parts, alts)
		i = j
	}
	if len(fixed) > 0 {
		parts = append(parts, []string{string(fixed)})
	}
	out := make([]string, 1, total)
	out[0] = key
	pick := make([]int, len(parts))
	for {
		var b strings.Builder
		b.Grow(len(key) + 8)
		for p, i := range pick {
			b.WriteString(parts[p][i])
		}
		if s := b.String(); s != key && (samePin || keyOf(s) == key) {
			// Tables newer than the pin may hold pieces c does not
			// decompose: there each spelling is checked.
			out = append(out, s)
		}
		p := len(pick) - 1
		for ; p >= 0; p-- {
			if pick[p]++; pick[p] < len(parts[p]) {
				break
			}
			pick[p] = 0
		}
		if p < 0 {
			return out, true
		}
	}
}

// keyOf is String, or a string no key equals when s has no form.
func keyOf(s string) string {
	c, err := String(s)
	if err != nil {
		return "\xff" + err.Error()
	}
	return c
}

// MaxWalkBytes is the longest key Equivalents walks: longer ones are
// refused, so that a hostile id cannot make a caller walk a long run of
// marks. MaxEquivalents is the most spellings it returns.
const (
	MaxWalkBytes   = 256
	MaxEquivalents = 1 << 16
)

// mayRespell reports whether a quick key may have another spelling: it
// holds a code point outside ASCII, or an ASCII character that one
// decomposes to alone ('K', ';', '`').
func mayRespell(key string) bool {
	return strings.ContainsAny(key, "K;`") || !isASCII(key)
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// decomposed is one code point of a full canonical decomposition.
type decomposed struct {
	r   rune
	ccc uint8
}

// decompose returns key's full canonical decomposition in canonical
// order.
func decompose(key string) []decomposed {
	d := make([]decomposed, 0, len(key))
	// Under newer tables a code point unassigned in the pin is a cut c
	// keeps as it is: nothing reorders or composes across it.
	decomposeEach(key, !samePin, func(r rune, ccc uint8) { d = append(d, decomposed{r, ccc}) })
	// Canonical order: a stable sort of each run of non-starters by class.
	for i := 1; i < len(d); i++ {
		m := d[i]
		j := i
		for j > 0 && m.ccc != 0 && d[j-1].ccc > m.ccc {
			d[j] = d[j-1]
			j--
		}
		d[j] = m
	}
	return d
}

// walker collects the spellings of one decomposition.
type walker struct {
	inv   map[rune][]piece
	limit int
	out   []string // the spellings found
	over  bool
}

// orders walks the orderings of d's runs of non-starters from position
// i on (ord holds the ordering so far) and cuts each complete one.
func (e *walker) orders(d []decomposed, i int, ord []rune) {
	if e.over {
		return
	}
	if i == len(d) {
		e.cut(ord)
		return
	}
	if d[i].ccc == 0 {
		e.orders(d, i+1, append(ord, d[i].r))
		return
	}
	j := i
	var queues [][]rune // the run's marks by class, in their order
	var classes []uint8 // the class of each queue
	for ; j < len(d) && d[j].ccc != 0; j++ {
		q := slices.Index(classes, d[j].ccc)
		if q < 0 {
			queues, classes = append(queues, nil), append(classes, d[j].ccc)
			q = len(queues) - 1
		}
		queues[q] = append(queues[q], d[j].r)
	}
	e.permute(d, j, queues, make([]int, len(queues)), j-i, ord)
}

// permute places the left marks of queues not yet taken (heads[q] of
// queue q are) after ord, in every order that keeps each class's marks in
// their order, then walks on from position next of d.
func (e *walker) permute(d []decomposed, next int, queues [][]rune, heads []int, left int, ord []rune) {
	if e.over {
		return
	}
	if left == 0 {
		e.orders(d, next, ord)
		return
	}
	for q, marks := range queues {
		if h := heads[q]; h < len(marks) {
			heads[q]++
			e.permute(d, next, queues, heads, left-1, append(ord, marks[h]))
			heads[q]--
		}
	}
}

// ccc is r's canonical combining class.
func ccc(r rune) uint8 {
	var buf [utf8.UTFMax]byte
	return norm.NFD.Properties(buf[:utf8.EncodeRune(buf[:], r)]).CCC()
}

// orderings returns how many orderings of d's runs of non-starters
// canonical ordering takes back to d (the product, over runs, of the
// multinomial of the run's classes), or limit+1 once there are more.
func orderings(d []decomposed, limit int) int {
	total := 1
	var count [256]int // marks of each class so far in the run
	var seen []uint8
	run := 0
	for _, m := range d {
		if m.ccc == 0 {
			for _, c := range seen {
				count[c] = 0
			}
			seen, run = seen[:0], 0
			continue
		}
		if count[m.ccc] == 0 {
			seen = append(seen, m.ccc)
		}
		run++
		count[m.ccc]++
		// Multinomial(run; counts) = Multinomial(run-1; counts before) ×
		// run / count: exact in integers at each step.
		if total = total * run / count[m.ccc]; total > limit {
			return limit + 1
		}
	}
	return total
}

// cut appends to e.out every way to write ord: each piece one code
// point of ord, or a code point whose decomposition is the piece (a
// singleton: the one code point). steps[i] lists the pieces that start
// at i, found once per ordering.
func (e *walker) cut(ord []rune) {
	steps := make([][]step, len(ord))
	for i, r := range ord {
		steps[i] = append(steps[i], step{r, i + 1})
		for _, p := range e.inv[r] {
			if n := i + 1 + len(p.rest); n <= len(ord) && slices.Equal(ord[i+1:n], p.rest) {
				steps[i] = append(steps[i], step{p.r, n})
			}
		}
		if l := r - hangulLBase; l >= 0 && l < hangulLCount && i+1 < len(ord) {
			if lv := compose(r, ord[i+1]); lv >= 0 {
				steps[i] = append(steps[i], step{lv, i + 2})
				if i+2 < len(ord) {
					if lvt := compose(lv, ord[i+2]); lvt >= 0 {
						steps[i] = append(steps[i], step{lvt, i + 3})
					}
				}
			}
		}
	}
	e.path(steps, 0, make([]rune, 0, len(ord)))
}

// step is a piece that starts where it is filed and ends before next.
type step struct {
	r    rune
	next int
}

// path appends every spelling steps allow from position i on, after sp.
func (e *walker) path(steps [][]step, i int, sp []rune) {
	if e.over {
		return
	}
	if i == len(steps) {
		// A spelling is one ordering cut one way: each is found once.
		if len(e.out) == e.limit {
			e.over = true
			return
		}
		e.out = append(e.out, string(sp))
		return
	}
	for _, st := range steps[i] {
		e.path(steps, st.next, append(sp, st.r))
	}
}

// piece is a code point r whose full canonical decomposition is the code
// point it is filed under, then rest.
type piece struct {
	rest []rune
	r    rune
}

var (
	invOnce sync.Once
	inv     inverseTable
)

// inverseTable is the decomposition table read backwards.
type inverseTable struct {
	pieces  map[rune][]piece  // by the first code point of its decomposition, each code point that has one (Hangul syllables aside: cut composes them)
	singles map[rune][]string // a starter's spellings alone, when it has more than itself
	joins   map[rune]bool     // starters a piece may hold after its first code point (Hangul vowels and trailing consonants among them)
}

// inverse returns the table of the code points assigned in
// PinnedUnicode (decompose.go, generated).
func inverse() *inverseTable {
	invOnce.Do(func() {
		inv = inverseTable{pieces: map[rune][]piece{}, singles: map[rune][]string{}, joins: map[rune]bool{}}
		for r := rune(hangulVBase); r < hangulVBase+hangulVCount; r++ {
			inv.joins[r] = true
		}
		for r := rune(hangulTBase + 1); r < hangulTBase+hangulTCount; r++ {
			inv.joins[r] = true
		}
		for i := range decompositions {
			r, d := decompositions[i].r, decompositions[i].d[:]
			if n := slices.Index(d, 0); n >= 0 {
				d = d[:n]
			}
			inv.pieces[d[0]] = append(inv.pieces[d[0]], piece{d[1:], r})
			if len(d) == 1 {
				if inv.singles[d[0]] == nil {
					inv.singles[d[0]] = []string{string(d[0])}
				}
				inv.singles[d[0]] = append(inv.singles[d[0]], string(r))
			}
			for _, x := range d[1:] {
				if ccc(x) == 0 {
					inv.joins[x] = true
				}
			}
		}
	})
	return &inv
}
