package rebuild

import (
	"context"
)

// batchKeys is how many keys go to the filter at once during scans and
// catch-up.
const batchKeys = 4096

// canonicalStored returns the canonical form of a key read from the
// database. A stored key that is not valid UTF-8 or longer than
// MaxKeyBytes is skipped (ok = false): no query can name it.
func (ix *Index) canonicalStored(key string, aliases *[][2]string) (c string, ok bool) {
	c, err := canonical(key)
	if err != nil {
		ix.m.skipped.Add(1)
		return "", false
	}
	if c != key {
		*aliases = append(*aliases, [2]string{c, key})
	}
	return c, true
}

// readLog reads the log entries after from up to upTo, notes the aliases
// of non-NFC spellings and, unless add is nil, hands the canonical keys to
// add in batches.
func (ix *Index) readLog(ctx context.Context, from, upTo uint64, add func([]string) error) error {
	var batch []string
	var aliases [][2]string
	err := ix.st.logSince(ctx, from, upTo, func(key string) error {
		c, ok := ix.canonicalStored(key, &aliases)
		if !ok || add == nil {
			return nil
		}
		if batch = append(batch, c); len(batch) == batchKeys {
			if err := add(batch); err != nil {
				return err
			}
			batch = batch[:0]
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(batch) > 0 {
		if err := add(batch); err != nil {
			return err
		}
	}
	return ix.st.noteAliases(ctx, aliases)
}
