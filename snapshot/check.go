package snapshot

import (
	"encoding/hex"
	"fmt"
	"time"

	"github.com/syncfilter/syncfilter/normalize"
)

// CheckNormalization is CheckPolicy with the policy of the header's
// Params.Compare (normalize.Policy, or syncfilter.PolicyBytes) and this
// program's Unicode version (normalize.UnicodeVersion()): a policy this
// program does not implement is refused. Under policy nfc/1 that version
// is pinned to 15.0.0 whatever tables the program is built with (package
// normalize reproduces 15.0.0's NFC with newer tables), so a toolchain
// upgrade does not invalidate snapshots; under bytes/1 it is written
// the same and plays no part in where a key's bits are. Whether the
// snapshot compares ids the way its reader's source does is the reader's
// to check (Params.Compare).
func (h *Header) CheckNormalization() error {
	return h.CheckPolicy(h.Params.Compare.Policy(), normalize.UnicodeVersion())
}

// CheckPolicy reports whether keys canonicalized under the given
// normalization policy and Unicode version land where they landed when
// the snapshot was built: both must match the header's, byte for byte.
// Anything else is refused (ErrIncompatible) rather than trusted;
// rebuilding costs one scan of the source. The format accepts any policy
// name: which ones a reader implements is its own choice.
func (h *Header) CheckPolicy(policy, unicodeVersion string) error {
	if h.Policy != policy {
		return fmt.Errorf("normalization policy %q, the reader uses %q: %w", h.Policy, policy, ErrIncompatible)
	}
	if h.UnicodeVersion != unicodeVersion {
		return fmt.Errorf("unicode version %s, the reader uses %s: %w", h.UnicodeVersion, unicodeVersion, ErrIncompatible)
	}
	return nil
}

// CheckDataset reports whether the snapshot was built from the dataset
// with the given id (ErrIncompatible otherwise): a snapshot of another
// database, or of a database that was deleted and created again, covers
// other records. The error names both datasets and when the file was
// written.
func (h *Header) CheckDataset(id [16]byte) error {
	if h.DatasetID != id {
		return fmt.Errorf("the file is the snapshot of dataset %s (written %s, generation %d), the database's source is dataset %s: "+
			"it was built from another database, or from this one before it was deleted and created again: %w",
			hex.EncodeToString(h.DatasetID[:]), h.Created.UTC().Format(time.RFC3339), h.Generation, hex.EncodeToString(id[:]), ErrIncompatible)
	}
	return nil
}
