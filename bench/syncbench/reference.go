package syncbench

import (
	"encoding/hex"
	"fmt"

	"golang.org/x/text/unicode/norm"
)

// Reference is the truth the answers are judged by: the canonical (NFC)
// spelling of every id the app stored, kept by the harness as it stores
// them. Lowercase UUIDs are kept as 16 bytes (a map the garbage collector
// need not scan), every other id as its NFC string and as stored.
type Reference struct {
	uuids   map[[16]byte]struct{}
	other   map[string]struct{} // NFC
	spelled map[string]struct{} // the other ids byte for byte as stored
}

// NewReference returns a reference holding the ids 0..rows-1 of
// RandomUUID, the base table's.
func NewReference(rows int64) *Reference {
	r := &Reference{uuids: make(map[[16]byte]struct{}, rows), other: map[string]struct{}{}, spelled: map[string]struct{}{}}
	for i := uint64(0); i < uint64(rows); i++ {
		r.uuids[uuidV4Bytes(i)] = struct{}{}
	}
	return r
}

// parseUUID returns the bytes of a lowercase 8-4-4-4-12 UUID. Uppercase
// hex is another id (SQLite compares bytes), so it does not parse.
func parseUUID(id string) (b [16]byte, ok bool) {
	if len(id) != 36 || id[8] != '-' || id[13] != '-' || id[18] != '-' || id[23] != '-' {
		return b, false
	}
	var h [32]byte
	n := 0
	for i := 0; i < 36; i++ {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			continue
		}
		c := id[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return b, false
		}
		h[n] = c
		n++
	}
	if _, err := hex.Decode(b[:], h[:]); err != nil {
		return b, false
	}
	return b, true
}

// Has reports whether an id canonically equal to id is stored.
func (r *Reference) Has(id string) bool {
	if b, ok := parseUUID(id); ok {
		_, ok := r.uuids[b]
		return ok
	}
	_, ok := r.other[norm.NFC.String(id)]
	return ok
}

// Add records id as stored.
func (r *Reference) Add(id string) {
	if b, ok := parseUUID(id); ok {
		r.uuids[b] = struct{}{}
		return
	}
	r.other[norm.NFC.String(id)] = struct{}{}
	r.spelled[id] = struct{}{}
}

// storedAs reports whether a row holds id byte for byte.
func (r *Reference) storedAs(id string) bool {
	if b, ok := parseUUID(id); ok {
		_, ok := r.uuids[b]
		return ok
	}
	_, ok := r.spelled[id]
	return ok
}

// Len returns how many ids are stored.
func (r *Reference) Len() int { return len(r.uuids) + len(r.other) }

// Truth returns the right answers for page: true where the id is not
// stored.
func (r *Reference) Truth(page []string) []bool {
	want := make([]bool, len(page))
	for i, id := range page {
		want[i] = !r.Has(id)
	}
	return want
}

// InListTruth returns what an IN-list of the ids' NFC spellings can
// know: true where no row holds the NFC spelling byte for byte (a name
// stored in NFD only is not fetched, to it).
func (r *Reference) InListTruth(page []string) []bool {
	want := make([]bool, len(page))
	for i, id := range page {
		want[i] = !r.storedAs(norm.NFC.String(id))
	}
	return want
}

// Differ counts the positions where a and b differ.
func Differ(a, b []bool) int {
	n := 0
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			n++
		}
	}
	return n + max(len(a), len(b)) - min(len(a), len(b))
}

// Judge compares a side's answers for page with the truth; the error
// names the first wrong position and counts them all.
func Judge(side string, page []string, got, want []bool) error {
	if len(got) != len(want) {
		return fmt.Errorf("%s: %d answers for a page of %d ids", side, len(got), len(want))
	}
	first, wrong := -1, 0
	for i := range want {
		if got[i] != want[i] {
			wrong++
			if first < 0 {
				first = i
			}
		}
	}
	if wrong == 0 {
		return nil
	}
	verdict := map[bool]string{true: "not fetched", false: "fetched"}
	return fmt.Errorf("WRONG ANSWER from %s: %d of %d ids; first at position %d: %q answered %s, it is %s",
		side, wrong, len(want), first, page[first], verdict[got[first]], verdict[want[first]])
}
