package bench

import (
	"strconv"
	"strings"
)

// A key shape is a family of distinct keys, one per index: what a cache or
// a sync engine would be asked about.
type shape struct {
	name string
	key  func(i uint64) string
}

var shapes = []shape{
	{"uuid", idKey},
	{"name", nameKey},
	{"numeric", numericKey},
}

// Precomposed (NFC) words with letters outside ASCII, as in place and
// person names; nameKey joins two of them and a number.
var nameWords = []string{
	"Ångström", "Łódź", "Zürich", "Kraków", "Dvořák", "Gödel", "Øresund",
	"Škoda", "Ñandú", "Brontë", "Façade", "Città", "Ærø", "Señor", "Göteborg",
	"Besançon", "Plzeň", "Tromsø", "Wrocław", "Québec", "Malmö", "Bjørn",
	"Józef", "Ørsted", "Müller", "Nuñez", "Čapek", "Lübeck", "Erdős", "Šibenik",
	"Évora", "Köln",
}

// nameKey returns the i-th name-shaped key, about 20 bytes with four to six
// two-byte letters: "Ångström/Łódź-123".
func nameKey(i uint64) string {
	x := mix(i)
	a := nameWords[x%uint64(len(nameWords))]
	b := nameWords[(x>>8)%uint64(len(nameWords))]
	return a + "/" + b + "-" + strconv.FormatUint(i, 10)
}

// numericKey returns the i-th short numeric id, nine or ten digits
// ("730432150"); distinct for distinct i below 2^32 (an odd multiplier is
// a bijection modulo 2^32).
func numericKey(i uint64) string {
	return strconv.FormatUint(100_000_000+(i*0x9e3779b1)&0xffffffff, 10)
}

// coldQueries returns count keys drawn at random from indexes [0, 2n):
// half were inserted (below n), half never were. Their bytes are
// contiguous in drawing order, so reading a key streams through memory
// while the filter is probed at random over its whole size.
func coldQueries(key func(uint64) string, n uint64, count int) []string {
	var sb strings.Builder
	ends := make([]int, count)
	for i := 0; i < count; i++ {
		sb.WriteString(key(mix(uint64(i)^0x5eed) % (2 * n)))
		ends[i] = sb.Len()
	}
	all := sb.String()
	out := make([]string, count)
	start := 0
	for i, end := range ends {
		out[i], start = all[start:end], end
	}
	return out
}
