package snapshot

import (
	"fmt"

	"github.com/zeebo/blake3"
)

// keyIDMessage is what KeyID hashes under the key. Its first byte, 0xFF,
// occurs in no UTF-8 string, and every normalization policy hashes valid
// UTF-8 only: the message is never a key's canonical bytes, so the key id
// is the keyed hash at a point where no position is ever computed.
const keyIDMessage = "\xffsyncfilter snapshot key id"

// KeyID identifies key without revealing it: the first 16 bytes of
// BLAKE3-keyed-256(key, "\xffsyncfilter snapshot key id"). A version 2
// header stores it in place of the key, so that a reader holding a key
// can tell whether it is the file's before reading the payload. Keyed
// BLAKE3 is a pseudorandom function of its input, and this input is no
// key's canonical bytes: the key id says nothing about any id's
// positions, and testing a guessed key against it is a search of 2^256.
func KeyID(key [32]byte) (id [16]byte) {
	h, _ := blake3.NewKeyed(key[:]) // never fails: the key is 32 bytes by type
	_, _ = h.WriteString(keyIDMessage)
	copy(id[:], h.Sum(nil))
	return id
}

// CheckKey reports whether key is the key the snapshot's positions were
// placed with (ErrWrongKey otherwise): the key in a version 1 header, the
// key whose KeyID a version 2 header stores. It needs the header only.
func (h *Header) CheckKey(key [32]byte) error {
	f, err := formatOf(h.Version)
	if err != nil {
		return fmt.Errorf("check key: %w", err)
	}
	switch {
	case f.keyInHeader && h.Params.Key != key:
		return fmt.Errorf("check key: the version %d header holds another key (key id %x, the key given has %x): %w", h.Version, h.KeyID, KeyID(key), ErrWrongKey)
	case !f.keyInHeader && h.KeyID != KeyID(key):
		return fmt.Errorf("check key: key id %x, the key given has %x: %w", h.KeyID, KeyID(key), ErrWrongKey)
	}
	return nil
}

// readKey is the key step of a read, after the header and before the
// length: the key given must be the file's, and then becomes
// h.Params.Key. need says that the caller wants the bits (Decode,
// ReadFile), not only their integrity or the header: a version 2
// snapshot is then refused without a key.
func (o *options) readKey(h *Header, need bool) error {
	if o.key == nil {
		if need && !formats[h.Version].keyInHeader {
			return fmt.Errorf("version %d keeps the key of the positions in the database, and none was given (WithKey): %w", h.Version, ErrWrongKey)
		}
		return nil
	}
	if err := h.CheckKey(*o.key); err != nil {
		return err
	}
	h.Params.Key = *o.key
	return nil
}
