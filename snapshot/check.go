package snapshot

import (
	"encoding/hex"
	"fmt"
	"time"

	"github.com/syncfilter/syncfilter/normalize"
)

// CheckNormalization reports whether keys canonicalized by this program
// land where they landed when the snapshot was built: the normalization
// policy and the Unicode version that defines it must both match. Under
// policy nfc/1 that version is pinned to 15.0.0 whatever tables the
// program is built with (package normalize reproduces 15.0.0's NFC with
// newer tables), so a toolchain upgrade does not invalidate snapshots.
// Anything else is refused (ErrIncompatible) rather than trusted;
// rebuilding costs one scan of the source.
func (h *Header) CheckNormalization() error {
	if h.Policy != normalize.Policy {
		return fmt.Errorf("normalization policy %q, this program uses %q: %w", h.Policy, normalize.Policy, ErrIncompatible)
	}
	if v := normalize.UnicodeVersion(); h.UnicodeVersion != v {
		return fmt.Errorf("unicode version %s, this program uses %s: %w", h.UnicodeVersion, v, ErrIncompatible)
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
