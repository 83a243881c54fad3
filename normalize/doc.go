// Package normalize is the only place where a record id becomes the bytes
// that a filter hashes.
//
// # Notation
//
// Let c(s) be the canonical form of a key s: s in Unicode Normalization Form
// C (NFC) as defined by Unicode 15.0.0 ([PinnedUnicode]), encoded as UTF-8. Two keys are the same key when their canonical
// forms are equal byte for byte. NFC folds canonically equivalent spellings
// together: "é" written as U+00E9 and as "e" U+0301, Hangul syllables and
// their conjoining jamo, U+212B ANGSTROM SIGN and U+00C5, combining marks in
// either canonical order. Nothing else is folded: no case folding, no
// trimming, no compatibility (NFKC) mapping, no removal of NUL or control
// characters. The empty key is a key.
//
// # Policy
//
// The rules above are named by [Policy]. A persisted filter records the
// policy and the Unicode version that defines c ([UnicodeVersion], always
// 15.0.0 under policy nfc/1); a reader whose policy or version differs must
// not trust the filter. The version is pinned, not taken from the tables
// this program is built with ([TablesVersion]): Unicode only promises that
// NFC is stable for characters assigned in both versions, so newer tables
// reproduce 15.0.0's NFC by treating code points unassigned in 15.0.0 as
// 15.0.0 did (pinned.go). A program built with Unicode 17 tables (Go 1.27)
// thus computes the same c and keeps every snapshot usable. Any future rule,
// such as case folding or a newer Unicode, gets a new policy identifier.
//
// # Cost
//
// Keys that are already canonical, which includes every ASCII key, are
// returned as they are, without allocating: an ASCII key is recognised eight
// bytes at a time, and other keys are checked with the quick-check property
// of the normalization tables before anything is rewritten.
//
// # Errors
//
// A key that is not valid UTF-8 is refused with an [*InvalidUTF8Error] that
// names the byte offset; errors.Is(err, [ErrInvalidUTF8]) reports it.
// Encoded surrogate halves (U+D800–U+DFFF) and overlong encodings are
// invalid UTF-8.
package normalize
