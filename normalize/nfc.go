package normalize

import (
	"sync"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// NFC, computed here: golang.org/x/text/unicode/norm decomposes (NFD and
// the canonical combining classes), this file
// composes. Canonical composition (UAX #15, section 3.11) goes through the
// decomposed code points in order and joins each one that is not blocked
// from the last starter with it when the two are a primary composite: the
// table of compose.go (normalize/internal/compgen, from the Unicode
// Character Database of PinnedUnicode) or a Hangul syllable, composed
// algorithmically. A code point is blocked when a code point between it
// and the starter has combining class 0 or one not lower than its own.
//
// golang.org/x/text composed wrongly before v0.42.0 (which asks for Go
// 1.26): pairs of code points beyond the BMP aliased BMP pairs (U+10041
// U+0301 became U+00C1), a starter that combines with nothing did not
// block a later mark from the starter before it, and marks after a
// Hangul syllable were not composed. Its decomposition, combining classes
// and quick check are right in every version with Unicode 15.0.0 tables,
// so only the composition is done here, and c is the same with any
// golang.org/x/text from the floor of go.mod on. Like golang.org/x/text's
// NFC, the decomposition follows the Stream-Safe Text Format: after 30
// non-starters in a row it inserts U+034F, a starter that composes with
// nothing, so a key's c is what golang.org/x/text v0.42.0 and later give.

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

// composer composes a stream of decomposed code points in canonical
// order, appending the result to out.
type composer struct {
	out []byte
	// pend holds the last starter, which may still change, and the code
	// points after it that did not compose with it (their classes are
	// non-zero and, in canonical order, not decreasing); n of them.
	pend [64]rune
	n    int
	last uint8 // the class of pend[n-1] (0: only the starter)
}

func (c *composer) add(r rune, ccc uint8) {
	if c.n > 0 && (c.n == 1 || c.last < ccc) { // not blocked
		if x := compose(c.pend[0], r); x >= 0 {
			c.pend[0] = x
			return
		}
	}
	switch {
	case ccc == 0:
		c.flush()
	case c.n == 0: // no starter before it: nothing to compose with
		c.out = utf8.AppendRune(c.out, r)
		return
	case c.n == len(c.pend):
		// Unreachable: the decomposition puts U+034F after 30
		// non-starters. Writing the starter out keeps the result
		// canonically equivalent.
		c.flush()
		c.out = utf8.AppendRune(c.out, r)
		return
	}
	c.pend[c.n] = r
	c.n++
	c.last = ccc
}

// flush writes the pending code points out.
func (c *composer) flush() {
	for _, r := range c.pend[:c.n] {
		c.out = utf8.AppendRune(c.out, r)
	}
	c.n, c.last = 0, 0
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
	if out, ok := composeSegments(dst, s[n:]); ok {
		return out
	}
	// Many non-starters in a row: golang.org/x/text's NFD may put U+034F
	// among them (stream-safe), as its NFC does.
	nfd := scratch.Get().(*[]byte)
	defer scratch.Put(nfd)
	d := norm.NFD.AppendString((*nfd)[:0], s[n:])
	*nfd = d[:0]
	c := composer{out: dst}
	for i := 0; i < len(d); {
		if b := d[i]; b < utf8.RuneSelf {
			c.add(rune(b), 0)
			i++
			continue
		}
		r, size := utf8.DecodeRune(d[i:])
		c.add(r, norm.NFD.Properties(d[i:]).CCC())
		i += size
	}
	c.flush()
	return c.out
}

// maxNonStarters is golang.org/x/text's limit of non-starters in a row
// (the Stream-Safe Text Format's 30) before it inserts U+034F.
const maxNonStarters = 30

// composeSegments appends the NFC of s to dst, decomposing each code
// point with the tables' full canonical decomposition (Hangul syllables
// algorithmically) and putting each run of non-starters in canonical
// order (a stable sort by class): NFD, one segment at a time, without
// allocating. It reports false, having appended garbage, when
// golang.org/x/text's NFD might insert U+034F (stream-safe), which the
// caller then leaves to it.
func composeSegments(dst []byte, s string) ([]byte, bool) {
	c := composer{out: dst}
	var seg [maxNonStarters + 1]struct {
		r   rune
		ccc uint8
	}
	k := 0  // seg[:k]: a starter (or none, at the start) and its non-starters
	ns := 0 // of them, the non-starters
	ok := true
	emit := func(r rune, ccc uint8) {
		if ccc == 0 {
			for _, x := range seg[:k] {
				c.add(x.r, x.ccc)
			}
			seg[0].r, seg[0].ccc, k, ns = r, 0, 1, 0
			return
		}
		if ns == maxNonStarters {
			ok = false
			return
		}
		ns++
		j := k
		for j > 0 && seg[j-1].ccc > ccc {
			seg[j] = seg[j-1]
			j--
		}
		seg[j].r, seg[j].ccc = r, ccc
		k++
	}
	run := 0 // code points since the last that restarts the count (see below)
	for i := 0; i < len(s) && ok; {
		if b := s[i]; b < utf8.RuneSelf {
			emit(rune(b), 0)
			run = 0
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		// golang.org/x/text counts toward its limit the leading code
		// points of each code point's compatibility decomposition that
		// are not starters or combine backward (Hangul V and T jamo,
		// some vowel signs), at most 3 each, and restarts at one with
		// none (then at most 3 trailing ones count). A code point whose
		// compatibility decomposition starts with a starter that does not
		// combine backward restarts the count: 9 others after it cannot
		// reach 30, a tenth might, and then the whole is left to
		// golang.org/x/text's NFD, which inserts U+034F where it counts 30.
		if p := norm.NFKC.PropertiesString(s[i:]); p.BoundaryBefore() && p.LeadCCC() == 0 {
			run = 0
		} else if run++; run == 10 {
			return dst, false
		}
		if x := r - hangulSBase; x >= 0 && x < hangulSCount {
			emit(hangulLBase+x/(hangulVCount*hangulTCount), 0)
			emit(hangulVBase+x%(hangulVCount*hangulTCount)/hangulTCount, 0)
			if t := x % hangulTCount; t != 0 {
				emit(hangulTBase+t, 0)
			}
			i += size
			continue
		}
		p := norm.NFD.PropertiesString(s[i:])
		d := p.Decomposition()
		if len(d) == 0 {
			emit(r, p.CCC())
			i += size
			continue
		}
		for j := 0; j < len(d); {
			q := norm.NFD.Properties(d[j:])
			dr, dsize := utf8.DecodeRune(d[j:])
			emit(dr, q.CCC())
			j += dsize
		}
		i += size
	}
	if !ok {
		return dst, false
	}
	for _, x := range seg[:k] {
		c.add(x.r, x.ccc)
	}
	c.flush()
	return c.out, true
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
