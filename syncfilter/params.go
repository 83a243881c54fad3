package syncfilter

import (
	"crypto/rand"
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/syncfilter/syncfilter/normalize"
)

// Layout names how a digest becomes bit positions. It is recorded in
// snapshots; a reader refuses a layout it does not know.
type Layout uint8

const (
	// LayoutBlocked512 puts all k bits of a key in one 512-bit block (one
	// 64-byte cache line). See the package documentation for the exact
	// derivation.
	LayoutBlocked512 Layout = 1
)

func (l Layout) String() string {
	switch l {
	case LayoutBlocked512:
		return "blocked512"
	}
	return fmt.Sprintf("layout(%d)", uint8(l))
}

// Hash names the function that turns canonical key bytes into a digest.
type Hash uint8

const (
	// HashBLAKE3Keyed is the first 32 bytes of BLAKE3 in keyed-hash mode.
	HashBLAKE3Keyed Hash = 1
)

func (h Hash) String() string {
	switch h {
	case HashBLAKE3Keyed:
		return "blake3-keyed-256"
	}
	return fmt.Sprintf("hash(%d)", uint8(h))
}

// Compare names which ids are one key: the ids the server treats as one
// record. It is part of Params (it decides where a key's bits are) and
// is recorded in snapshots as their policy (Compare.Policy).
type Compare uint8

const (
	// CompareCanonical: ids equal after NFC are one key (normalize.Policy),
	// the default.
	CompareCanonical Compare = 0
	// CompareBytes: ids are one key only when their bytes are equal, as
	// a server of opaque ids, file paths or user-chosen names compares
	// them. Keys are still valid UTF-8 (an invalid key is refused).
	CompareBytes Compare = 1
)

// PolicyBytes is the snapshot policy of CompareBytes: the digest is taken
// over the key's bytes as given.
const PolicyBytes = "bytes/1"

// Policy returns the snapshot policy that names c: normalize.Policy or
// PolicyBytes ("" for an unknown Compare).
func (c Compare) Policy() string {
	switch c {
	case CompareCanonical:
		return normalize.Policy
	case CompareBytes:
		return PolicyBytes
	}
	return ""
}

// CompareOf returns the Compare a snapshot policy names.
func CompareOf(policy string) (Compare, bool) {
	switch policy {
	case normalize.Policy:
		return CompareCanonical, true
	case PolicyBytes:
		return CompareBytes, true
	}
	return 0, false
}

func (c Compare) String() string {
	switch c {
	case CompareCanonical:
		return "canonical"
	case CompareBytes:
		return "bytes"
	}
	return fmt.Sprintf("compare(%d)", uint8(c))
}

// Form returns the form of key the filter hashes under c: c(key) under
// CompareCanonical, key itself under CompareBytes; an error wrapping
// normalize.ErrInvalidUTF8 when key is not valid UTF-8.
func (c Compare) Form(key string) (string, error) {
	if c == CompareBytes {
		if !utf8.ValidString(key) {
			_, err := normalize.String(key) // names the offset
			return "", err
		}
		return key, nil
	}
	return normalize.String(key)
}

// Limits of the parameters.
const (
	BlockBits = 512     // bits per block of LayoutBlocked512
	MaxK      = 21      // positions per key: the 192 digest bits after the block index, 9 bits each
	MaxBits   = 1 << 36 // 8 GiB of bits: the largest filter this package builds or loads
)

// Params fully determine where a key's bits are. Two filters with equal
// Params give every key the same positions, on every platform.
type Params struct {
	Layout  Layout
	Hash    Hash
	M       uint64   // number of bits: a multiple of BlockBits, at most MaxBits
	K       uint32   // bits per key, 1..MaxK
	Key     [32]byte // BLAKE3 key: whoever holds it can test ids against the bits; kept in the database, out of snapshot files
	Compare Compare  // which ids are one key; CompareCanonical when zero
}

// NewParams sizes a filter for n distinct keys at false-positive rate fpr,
// with a random hash key from crypto/rand. It picks the smallest m (and for
// it the smallest k) whose expected rate, computed for the blocked layout
// (which loses a little against an unblocked filter because blocks fill
// unevenly), is at most fpr.
func NewParams(n uint64, fpr float64) (Params, error) {
	if n == 0 {
		return Params{}, fmt.Errorf("size filter: n = 0: %w", ErrInvalidParams)
	}
	if !(fpr > 0 && fpr < 1) { // also refuses NaN
		return Params{}, fmt.Errorf("size filter: false-positive rate %v not in (0, 1): %w", fpr, ErrInvalidParams)
	}
	blocks, k, ok := plan(n, fpr)
	if !ok {
		return Params{}, fmt.Errorf("size filter: %d keys at rate %v need more than %d bits: %w", n, fpr, uint64(MaxBits), ErrTooLarge)
	}
	return Params{Layout: LayoutBlocked512, Hash: HashBLAKE3Keyed, M: blocks * BlockBits, K: k, Key: randomKey()}, nil
}

// NewParamsMK returns parameters for m bits and k bits per key, with m
// rounded up to a multiple of BlockBits and a random hash key.
func NewParamsMK(m uint64, k uint32) (Params, error) {
	if m > MaxBits {
		return Params{}, fmt.Errorf("size filter: m = %d: %w", m, ErrTooLarge)
	}
	p := Params{Layout: LayoutBlocked512, Hash: HashBLAKE3Keyed, M: (m + BlockBits - 1) / BlockBits * BlockBits, K: k, Key: randomKey()}
	return p, p.Validate()
}

// Validate reports whether p describes a filter this package can build.
func (p Params) Validate() error {
	switch {
	case p.Layout != LayoutBlocked512:
		return fmt.Errorf("validate params: unknown %v: %w", p.Layout, ErrInvalidParams)
	case p.Hash != HashBLAKE3Keyed:
		return fmt.Errorf("validate params: unknown %v: %w", p.Hash, ErrInvalidParams)
	case p.M == 0:
		return fmt.Errorf("validate params: m = 0: %w", ErrInvalidParams)
	case p.M > MaxBits:
		return fmt.Errorf("validate params: m = %d above %d: %w", p.M, uint64(MaxBits), ErrTooLarge)
	case p.M%BlockBits != 0:
		return fmt.Errorf("validate params: m = %d not a multiple of %d: %w", p.M, BlockBits, ErrInvalidParams)
	case p.K == 0 || p.K > MaxK:
		return fmt.Errorf("validate params: k = %d not in [1, %d]: %w", p.K, MaxK, ErrInvalidParams)
	case p.Compare.Policy() == "":
		return fmt.Errorf("validate params: unknown %v: %w", p.Compare, ErrInvalidParams)
	}
	return nil
}

// Bytes returns the size of the bit array in bytes.
func (p Params) Bytes() uint64 { return p.M / 8 }

// ExpectedFPR returns the false-positive rate expected after n distinct
// keys are inserted, under the blocked model (Poisson block loads).
func (p Params) ExpectedFPR(n uint64) float64 {
	if p.M < BlockBits || p.K == 0 {
		return 1
	}
	return blockedFPR(float64(n), float64(p.M/BlockBits), p.K)
}

// Capacity returns the largest n whose ExpectedFPR is at most fpr.
func (p Params) Capacity(fpr float64) uint64 {
	if p.ExpectedFPR(1) > fpr {
		return 0
	}
	lo, hi := uint64(1), uint64(1)
	for p.ExpectedFPR(hi) <= fpr {
		lo, hi = hi, hi*2
		if hi > p.M { // no more keys than bits can stay under any useful rate
			return lo
		}
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if p.ExpectedFPR(mid) <= fpr {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// BitsPerKey returns m / n.
func (p Params) BitsPerKey(n uint64) float64 {
	if n == 0 {
		return math.Inf(1)
	}
	return float64(p.M) / float64(n)
}

func randomKey() (k [32]byte) {
	_, _ = rand.Read(k[:]) // crypto/rand.Read never fails (Go 1.24+)
	return k
}

// Positions returns the k bit positions of key in [0, m) under p, in
// derivation order, duplicates included, without a bit array: for
// known-answer vectors at any m. Queries never need it.
func (p Params) Positions(key string) ([]uint64, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	c, err := p.Compare.Form(key)
	if err != nil {
		return nil, err
	}
	d := newKeyHasher(p.Key).sum(c)
	return positions(&d, p.M/BlockBits, p.K), nil
}
