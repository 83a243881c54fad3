package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/syncfilter/syncfilter/rebuild"
)

// maxKeyBytes is the longest key query and check accept: the library's
// limit, applied exactly (a key of exactly this many bytes is accepted).
const maxKeyBytes = 64 << 10

// Batches of keys are answered together, for speed, but never held back
// waiting for more input: a batch ends at batchKeys keys, batchBytes
// bytes, or as soon as no further key is already waiting.
const (
	batchKeys  = 4096
	batchBytes = 1 << 20
)

// key is one input record: its text, and why it cannot be a key (too
// long: only its first bytes are kept).
type key struct {
	text    string
	tooLong bool
}

// streamKeys hands the keys to answer to each, in batches: the arguments
// if any, else stdin as it arrives (split on newlines, a trailing CR
// dropped, or with nul on NUL bytes). Memory stays bounded whatever the
// input: one batch and a short queue.
func (a *app) streamKeys(ctx context.Context, args []string, nul bool, each func([]key) error) error {
	if len(args) > 0 {
		for len(args) > 0 {
			n := min(len(args), batchKeys)
			batch := make([]key, n)
			for i, k := range args[:n] {
				batch[i] = key{text: k, tooLong: len(k) > maxKeyBytes}
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := each(batch); err != nil {
				return err
			}
			args = args[n:]
		}
		return nil
	}
	keys := make(chan key, 256)
	readErr := make(chan error, 1)
	go func() {
		defer close(keys)
		readErr <- readKeys(a.stdin, nul, keys)
	}()
	drain := func() { // let the reader finish into the void
		go func() {
			for range keys {
			}
		}()
	}
	for {
		var first key
		select {
		case k, ok := <-keys:
			if !ok {
				if err := <-readErr; err != nil {
					return fmt.Errorf("read keys: %w", err)
				}
				return nil
			}
			first = k
		case <-ctx.Done(): // stdin may stay open and silent: a signal still ends the run
			drain()
			return ctx.Err()
		}
		batch, size := []key{first}, len(first.text)
	more:
		for len(batch) < batchKeys && size < batchBytes {
			select {
			case k, ok := <-keys:
				if !ok {
					break more
				}
				batch, size = append(batch, k), size+len(k.text)
			default:
				break more // input ran dry: answer what we have now
			}
		}
		if err := each(batch); err != nil {
			drain()
			return err
		}
	}
}

// readKeys splits r into keys and sends them. A line longer than
// maxKeyBytes is sent as tooLong with its first bytes only; the rest of it
// is skipped without being held.
func readKeys(r io.Reader, nul bool, out chan<- key) error {
	delim := byte('\n')
	if nul {
		delim = 0
	}
	br := bufio.NewReaderSize(r, maxKeyBytes+2) // the key, a CR, the delimiter
	for {
		line, err := br.ReadSlice(delim)
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			out <- key{text: string(line[:64]), tooLong: true}
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice(delim)
			}
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			continue
		case errors.Is(err, io.EOF):
			if len(line) > 0 {
				out <- toKey(line, nul)
			}
			return nil
		case err != nil:
			return err
		}
		out <- toKey(line[:len(line)-1], nul)
	}
}

func toKey(b []byte, nul bool) key {
	if !nul {
		b = bytes.TrimSuffix(b, []byte{'\r'})
	}
	return key{text: string(b), tooLong: len(b) > maxKeyBytes}
}

// output writes one record per key, text or JSON.
type output struct {
	w       *bufio.Writer
	nul     bool // records end with NUL; keys are written raw
	json    bool
	invalid int // keys answered "invalid"
	keys    int
	log     *logger
	cmd     string
}

// answer writes the verdict for k.
func (o *output) answer(k string, verdict string) { o.record(k, verdict, "") }

// record writes one record; why, for an invalid key, goes into the JSON
// form only (text records carry the verdict and the key).
func (o *output) record(k, verdict, why string) {
	o.keys++
	if o.json {
		b, _ := json.Marshal(struct {
			Key    string `json:"key"`
			Answer string `json:"answer"`
			Error  string `json:"error,omitempty"`
		}{k, verdict, why})
		o.w.Write(b)
		o.w.WriteByte('\n')
		return
	}
	o.w.WriteString(verdict)
	o.w.WriteByte('\t')
	if o.nul {
		o.w.WriteString(k)
		o.w.WriteByte(0)
		return
	}
	o.w.WriteString(display(k))
	o.w.WriteByte('\n')
}

// need writes the verdict of Need for line (id<TAB>version): "have" or
// "need" in text records (the verdict, the id, the version), "have",
// "new" or "updated" in JSON, whose record carries the id and the version
// apart.
func (o *output) need(line string, n rebuild.Verdict) {
	id, ver, _ := splitVersion(line)
	o.keys++
	switch {
	case o.json:
		b, _ := json.Marshal(struct {
			Key     string `json:"key"`
			Version string `json:"version"`
			Answer  string `json:"answer"`
		}{id, ver, n.String()})
		o.w.Write(b)
		o.w.WriteByte('\n')
		return
	case n == rebuild.Have:
		o.w.WriteString("have\t")
	default:
		o.w.WriteString("need\t")
	}
	if o.nul {
		o.w.WriteString(line)
		o.w.WriteByte(0)
		return
	}
	o.w.WriteString(display(id) + "\t" + display(ver) + "\n")
}

// reject writes an "invalid" record for k and says why on stderr. Of a key
// too long, only its first bytes were kept: text records print them quoted
// and followed by "...".
func (o *output) reject(k key, why error) {
	o.invalid++
	cut := ""
	if k.tooLong {
		why, cut = fmt.Errorf("longer than %d bytes", maxKeyBytes), "..."
	}
	o.log.printf("syncfilter %s: key %d (%s%s): %v", o.cmd, o.keys+1, display(k.text), cut, why)
	if k.tooLong && !o.nul && !o.json {
		o.keys++
		o.w.WriteString("invalid\t" + strconv.Quote(k.text) + "...\n")
		return
	}
	o.record(k.text, "invalid", why.Error())
}

// done returns the run's outcome once every key was answered.
func (o *output) done() error {
	if err := o.w.Flush(); err != nil {
		return err
	}
	if o.invalid > 0 {
		return &exitError{code: exitInvalid, msg: fmt.Sprintf("%d of %d keys invalid (answered \"invalid\"; the others were answered)", o.invalid, o.keys)}
	}
	return nil
}

// display returns a key as printed in text records: as is, unless it is
// empty, begins or ends with a space, or holds a double quote, a control
// character (C0, DEL, C1), U+2028, U+2029, or bytes that are not UTF-8;
// then it is printed double-quoted with Go escapes (strconv.Quote), which
// strconv.Unquote reverses. A printed key that starts with a double quote
// is therefore always a quoted one.
func display(k string) string {
	if needsQuote(k) {
		return strconv.Quote(k)
	}
	return k
}

func needsQuote(k string) bool {
	if k == "" || k[0] == ' ' || k[len(k)-1] == ' ' || !utf8.ValidString(k) {
		return true
	}
	return strings.IndexFunc(k, func(r rune) bool {
		return r == '"' || unicode.IsControl(r) || r == '\u2028' || r == '\u2029'
	}) >= 0
}
