// Package syncfilter is a Bloom filter for sync clients: it answers
// "certainly never added" or "maybe added" for record ids.
//
// # Basics
//
// A sync engine asks, for each id a server lists, whether it already
// fetched that record. MightContain answers false ("absent") only for keys
// that were certainly never added: fetch the record, no database lookup
// needed. It answers true ("maybe") for every added key and, at the planned
// false-positive rate, for some others: a maybe must be confirmed in the
// source of truth and must never be taken as "fetched". Package rebuild
// wires the filter to SQLite that way.
//
// Size a filter with NewParams (expected keys, target false-positive rate)
// or NewParamsMK (bits, bits per key), then New. Params.Compare says which
// ids are one key. By default (CompareCanonical) keys are canonicalized by
// package normalize first, so canonically equivalent spellings (NFC and
// NFD, say) are the same key; under CompareBytes only equal bytes are.
//
// # Concurrency
//
// A Filter has one writer goroutine, started by New and stopped by Close,
// that applies every bit change. Add and AddBatch hash on the calling
// goroutine, hand the positions to the writer and return once the bits are
// set; from then on every query on every goroutine sees them. Queries read
// the bit array with atomic 64-bit loads and never wait for the writer.
// Image asks the writer for a consistent copy, taken between two inserts.
//
// # Derivation
//
// Where a key's bits are depends only on the canonical bytes, the 32-byte
// hash key, m, k and the layout, and is defined byte by byte:
//
//	c      = UTF-8 bytes of the NFC form of the key (package normalize);
//	         under CompareBytes, the key's bytes as given
//	d      = first 32 bytes of BLAKE3 keyed-hash mode, key = Params.Key, input = c
//	blocks = m / 512
//	block  = high 64 bits of the 128-bit product u64le(d[0:8]) × blocks
//	p_i    = bits 64+9i … 72+9i of d, read as a little-endian 256-bit
//	         integer (bit j of d is bit j%8 of byte d[j/8]), for i = 0 … k-1
//	bit_i  = 512·block + p_i
//
// The multiply-shift reduction maps the 64-bit value onto [0, blocks) with
// a bias of at most blocks/2^64, unlike a modulo. Positions within a block
// may repeat; a repeat costs a little accuracy, which the sizing accounts
// for. Bit i of the filter is bit i%64 of 64-bit word i/64, and words are
// stored little-endian by package snapshot, so bit i is bit i%8 of byte
// i/8 of the payload. Known-answer tests pin all of this.
//
// # Layout
//
// LayoutBlocked512 keeps all of a key's bits in one 512-bit block, the size
// of a cache line: a query costs one memory access however large the
// filter. Blocks fill unevenly, so a blocked filter needs slightly more bits
// than a classic one for the same rate (about 9.9 bits per key at 1%
// instead of 9.6); NewParams sizes with the exact blocked model.
//
// # Hashing
//
// Keys of up to 64 bytes are hashed by a single BLAKE3 compression written
// in this package. One key at a time (MightContain, Add) it is assembly
// chosen for the CPU's latency (internal/hash1gen): general-purpose
// registers on AMD Zen 5 (family 26 and later), where vector operations
// take two cycles, and on AMD without AVX-512; row-parallel AVX-512, AVX2
// or SSE4.1 elsewhere. Eight at a time (the batch calls) it
// runs in AVX2 lanes (internal/hash8gen). Other architectures and the
// purego build tag take the pure-Go compression. Longer keys go through
// github.com/zeebo/blake3. Every path gives the bytes of the BLAKE3
// reference, which the tests check for every length and kernel.
// The hash key is random by default: ids chosen by an adversary cannot be
// aimed at one block, and bits without their key test no id (package
// snapshot keeps the key out of its files). Fixtures pass a fixed key for
// reproducible output.
//
// # Deletion
//
// Bloom filters cannot forget a key. A deleted record stays "maybe" and is
// found absent when confirmed. Stats tells when the filter has become too
// full; the remedy is to build a new one.
package syncfilter
