// Package normalize is the only place where a record id becomes the bytes
// that a filter hashes.
//
// # Notation
//
// Let c(s) be the canonical form of a key s: s in Unicode Normalization Form
// C (NFC), encoded as UTF-8. Two keys are the same key when their canonical
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
// policy and the Unicode version of the normalization tables in use
// ([UnicodeVersion]); a reader whose policy or Unicode version differs must
// not trust the filter (Unicode only promises that NFC is stable for
// characters assigned in both versions). Any future rule, such as case
// folding, gets a new policy identifier.
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
