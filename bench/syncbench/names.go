package syncbench

import (
	"strconv"

	"golang.org/x/text/unicode/norm"
)

// Unicode names are record ids a person typed (a file, a tag, a
// contact): words whose NFC and NFD spellings differ (accents, Hangul,
// Greek tonos, kana with a voicing mark), so one name can reach the app in
// either normalization.
var nameWords = []string{
	"café", "naïve", "Ångström", "jalapeño", "façade", "crème", "brûlée", "Zürich",
	"São", "Dvořák", "Łódź", "Ελληνικά", "한국어", "Tiếng", "Việt", "résumé",
	"piñata", "Çatalhöyük", "Kraków", "Ñandú", "élève", "Bär", "Füße", "ガイド",
}

// Name returns the i-th Unicode name in NFC: two words and i, so that
// names never repeat.
func Name(i uint64) string {
	r := mix(i ^ 0x6e616d65)
	a, b := nameWords[r%uint64(len(nameWords))], nameWords[(r>>32)%uint64(len(nameWords))]
	return norm.NFC.String(a + " " + b + " " + strconv.FormatUint(i, 10))
}

// NameNFD reports whether name i is stored (or first sent) in NFD: one
// in four.
func NameNFD(i uint64) bool { return i%4 == 0 }

// spelled returns name in NFD if nfd, else in NFC.
func spelled(name string, nfd bool) string {
	if nfd {
		return norm.NFD.String(name)
	}
	return norm.NFC.String(name)
}

// otherForm returns id in the other normalization: NFD if id is NFC,
// NFC otherwise.
func otherForm(id string) string {
	if norm.NFC.IsNormalString(id) {
		return norm.NFD.String(id)
	}
	return norm.NFC.String(id)
}
