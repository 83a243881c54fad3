package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/syncfilter/syncfilter/normalize"
)

// maxKeyBytes bounds one key read from stdin, so that a stream without a
// separator cannot grow memory without bound.
const maxKeyBytes = 1 << 20

// readKeys returns the keys to answer: the positional arguments if any,
// else stdin split on newlines (a trailing CR is dropped) or, with nul, on
// NUL bytes. Every key must be valid UTF-8.
func (a *app) readKeys(args []string, nul bool) ([]string, error) {
	keys := args
	if len(keys) == 0 {
		var err error
		if keys, err = splitInput(a.stdin, nul); err != nil {
			return nil, err
		}
	}
	for i, k := range keys {
		if _, err := normalize.String(k); err != nil {
			return nil, usagef("key %d (%s): %v", i+1, display(k), err)
		}
	}
	return keys, nil
}

func splitInput(r io.Reader, nul bool) ([]string, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), maxKeyBytes)
	if nul {
		sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
			if i := bytes.IndexByte(data, 0); i >= 0 {
				return i + 1, data[:i], nil
			}
			if atEOF && len(data) > 0 {
				return len(data), data, nil
			}
			return 0, nil, nil
		})
	}
	var keys []string
	for sc.Scan() {
		k := sc.Text()
		if !nul {
			k = strings.TrimSuffix(k, "\r")
		}
		keys = append(keys, k)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, usagef("read keys: a key longer than %d bytes", maxKeyBytes)
		}
		return nil, fmt.Errorf("read keys: %w", err)
	}
	return keys, nil
}

// answer writes one result record: the verdict, a tab, the key. Records end
// with a newline, or with NUL when the keys came NUL-separated. In
// newline mode a key holding control characters is written quoted, so
// that every record stays on one line.
func (a *app) answer(w *bufio.Writer, verdict, key string, nul bool) {
	w.WriteString(verdict)
	w.WriteByte('\t')
	if nul {
		w.WriteString(key)
		w.WriteByte(0)
		return
	}
	w.WriteString(display(key))
	w.WriteByte('\n')
}

// display returns key as is, or Go-quoted if it holds a control character
// or is not valid UTF-8.
func display(key string) string {
	if !utf8.ValidString(key) || strings.IndexFunc(key, unicode.IsControl) >= 0 {
		return strconv.Quote(key)
	}
	return key
}
