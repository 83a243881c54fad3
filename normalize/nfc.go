package normalize

import (
	"slices"
	"sync"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// NFC, computed here: golang.org/x/text/unicode/norm provides the tables
// (the full canonical decompositions and the canonical combining
// classes), this file decomposes, orders and composes. It is standard
// NFC (UAX #15): the full canonical decomposition, the canonical ordering
// of every run of non-starters whatever its length (a stable sort by
// class), and the canonical composition. Canonical composition (UAX #15,
// section 3.11) goes through the decomposed code points in order and
// joins each one that is not blocked from the last starter with it when
// the two are a primary composite: the table of compose.go
// (normalize/internal/compgen, from the Unicode Character Database of
// PinnedUnicode) or a Hangul syllable, composed algorithmically. A code
// point is blocked when a code point between it and the starter has
// combining class 0 or one not lower than its own.
//
// golang.org/x/text's own NFC and NFD are not used for the result. They
// follow the Stream-Safe Text Format (UAX #15, section 13): after 30
// non-starters in a row they insert U+034F COMBINING GRAPHEME JOINER, so
// two canonically equivalent keys with a long run of marks could get
// different bytes. c inserts nothing: no U+034F appears in c(s) unless s
// has it. golang.org/x/text also composed wrongly before v0.42.0 (which
// asks for Go 1.26): pairs of code points beyond the BMP aliased BMP
// pairs (U+10041 U+0301 became U+00C1), a starter that combines with
// nothing did not block a later mark from the starter before it, and
// marks after a Hangul syllable were not composed. Its decompositions,
// combining classes and quick check are right in every version with
// Unicode 15.0.0 tables (its quick check only ever stops early on a long
// run, sending the key here), so c is the same with any
// golang.org/x/text from the floor of go.mod on.

// Hangul syllables (Unicode chapter 3.12): S = SBase + (L*VCount + V)*TCount + T.
const (
	hangulSBase  = 0xAC00
	hangulLBase  = 0x1100
	hangulVBase  = 0x1161
	hangulTBase  = 0x11A7
	hangulLCount = 19
	hangulVCount = 21
	hangulTCount = 28
	hangulSCount = hangulLCount * hangulVCount * hangulTCount
)

// compose returns the primary composite of a followed by b, or -1.
func compose(a, b rune) rune {
	switch {
	case a >= hangulLBase && a < hangulLBase+hangulLCount && b >= hangulVBase && b < hangulVBase+hangulVCount:
		return hangulSBase + ((a-hangulLBase)*hangulVCount+(b-hangulVBase))*hangulTCount
	case a >= hangulSBase && a < hangulSBase+hangulSCount && (a-hangulSBase)%hangulTCount == 0 &&
		b > hangulTBase && b < hangulTBase+hangulTCount:
		return a + b - hangulTBase
	}
	key := uint64(a)<<21 | uint64(b)
	lo, hi := 0, len(compositions)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if compositions[m].pair < key {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(compositions) && compositions[lo].pair == key {
		return compositions[lo].r
	}
	return -1
}

// appendNFC appends the NFC of valid UTF-8 s (with the tables' code
// points; see pinned.go for those unassigned in PinnedUnicode) to dst,
// on its own: never composed with what dst holds.
func appendNFC(dst []byte, s string) []byte {
	// A leading run of ASCII and quick code points is copied as it is,
	// but for its last code point, a starter that may compose with what
	// follows it.
	n := quickPrefix(s)
	dst = append(dst, s[:n]...)
	if n == len(s) {
		return dst
	}
	return composeSegments(dst, s[n:])
}

// mark is a non-starter (a code point of non-zero canonical combining
// class) of the decomposition, waiting for the end of its run.
type mark struct {
	r   rune
	ccc uint8
}

// composeSegments appends the NFC of s to dst: it decomposes each code
// point with the tables' full canonical decomposition (Hangul syllables
// algorithmically), puts each run of non-starters, however long, in
// canonical order (a stable sort by class) and composes it with the
// starter before it (UAX #15, sections 3.11 and 3.12: standard NFC, with
// no stream-safe limit, so no U+034F is ever inserted). A run is kept in
// an array on the stack while it is short; a longer one grows on the
// heap.
func composeSegments(out []byte, s string) []byte {
	var buf [32]mark
	marks := buf[:0]    // the run of non-starters after starter, in input order
	starter := rune(-1) // the last starter, which may still change; -1: none yet
	// emit takes the next code point of the decomposition.
	emit := func(r rune, ccc uint8) {
		if ccc != 0 {
			marks = append(marks, mark{r, ccc})
			return
		}
		// A starter ends the run: compose it, then r joins the last
		// starter only when nothing is left between them.
		var rest []mark
		starter, rest = composeRun(starter, marks)
		if len(rest) == 0 && starter >= 0 {
			if x := compose(starter, r); x >= 0 {
				starter, marks = x, marks[:0]
				return
			}
		}
		out = appendSegment(out, starter, rest)
		starter, marks = r, marks[:0]
	}
	decomposeEach(s, false, emit)
	starter, rest := composeRun(starter, marks)
	return appendSegment(out, starter, rest)
}

// decomposeEach calls emit with each code point of the full canonical
// decomposition of valid UTF-8 s and its combining class, in the order
// of s (not yet in canonical order): the tables' decompositions, Hangul
// syllables algorithmically. With cuts, a code point unassigned in
// PinnedUnicode is emitted as a starter, as c keeps it (pinned.go).
func decomposeEach(s string, cuts bool, emit func(r rune, ccc uint8)) {
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			emit(rune(b), 0)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if x := r - hangulSBase; x >= 0 && x < hangulSCount {
			emit(hangulLBase+x/(hangulVCount*hangulTCount), 0)
			emit(hangulVBase+x%(hangulVCount*hangulTCount)/hangulTCount, 0)
			if t := x % hangulTCount; t != 0 {
				emit(hangulTBase+t, 0)
			}
			continue
		}
		if cuts && !isAssigned(r) {
			emit(r, 0)
			continue
		}
		p := norm.NFD.PropertiesString(s[i-size:])
		d := p.Decomposition()
		if len(d) == 0 {
			emit(r, p.CCC())
			continue
		}
		for j := 0; j < len(d); {
			q := norm.NFD.Properties(d[j:])
			dr, dsize := utf8.DecodeRune(d[j:])
			emit(dr, q.CCC())
			j += dsize
		}
	}
}

// composeRun puts run, the non-starters after starter (-1: none), in
// canonical order and composes each that is not blocked with the
// starter: in canonical order a mark is blocked exactly when the mark
// left before it has the same class. It returns the starter, perhaps
// now a composite, and the marks left, in order: a prefix of run, which
// it reuses.
func composeRun(starter rune, run []mark) (rune, []mark) {
	if len(run) > 1 {
		sortMarks(run)
	}
	if starter < 0 {
		return starter, run
	}
	w := 0
	var last uint8 // the class of run[w-1]
	for _, m := range run {
		if w == 0 || last < m.ccc {
			if x := compose(starter, m.r); x >= 0 {
				starter = x
				continue
			}
		}
		run[w] = m
		w++
		last = m.ccc
	}
	return starter, run[:w]
}

// sortMarks sorts a run of non-starters stably by class, the canonical
// ordering algorithm: an insertion sort for the short runs of real text,
// a merge sort (O(n log n) comparisons) for long ones.
func sortMarks(run []mark) {
	if len(run) > 16 {
		slices.SortStableFunc(run, func(a, b mark) int { return int(a.ccc) - int(b.ccc) })
		return
	}
	for i := 1; i < len(run); i++ {
		m := run[i]
		j := i
		for j > 0 && run[j-1].ccc > m.ccc {
			run[j] = run[j-1]
			j--
		}
		run[j] = m
	}
}

// appendSegment appends starter (unless -1) and the marks after it.
func appendSegment(out []byte, starter rune, marks []mark) []byte {
	if starter >= 0 {
		out = utf8.AppendRune(out, starter)
	}
	for _, m := range marks {
		out = utf8.AppendRune(out, m.r)
	}
	return out
}

// quickPrefix returns the length of the longest prefix of s made of ASCII
// and quick code points (quick.go) less its last code point, or len(s)
// when all of s is.
func quickPrefix(s string) int {
	lastStart := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			lastStart = i
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if size == 1 || !isQuick(r) {
			return lastStart
		}
		lastStart = i
		i += size
	}
	return len(s)
}

// scratch holds buffers for the decomposition and for a composition
// that may equal the key, so that the slow path allocates only the new
// key (and normalizing a key that is canonical, nothing).
var scratch = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

// nfc returns the NFC of valid UTF-8 s (with the tables' code points): s
// itself when it is in NFC.
func nfc(s string) string {
	if norm.NFC.QuickSpanString(s) == len(s) {
		return s
	}
	b := scratch.Get().(*[]byte)
	defer scratch.Put(b)
	out := appendNFC((*b)[:0], s)
	*b = out[:0]
	if string(out) == s {
		return s
	}
	return string(out)
}
