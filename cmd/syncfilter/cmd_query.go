package main

import (
	"bufio"
	"context"
	"fmt"

	"github.com/syncfilter/syncfilter/snapshot"
)

func (a *app) query(_ context.Context, args []string) error {
	fs := a.flags("query")
	nul := fs.Bool("0", false, "keys on stdin are NUL-separated; so are the output records")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef("want a snapshot FILE, then keys (or keys on stdin)")
	}
	keys, err := a.readKeys(pos[1:], *nul)
	if err != nil {
		return err
	}
	s, err := snapshot.ReadFile(pos[0])
	if err != nil {
		return err
	}
	if err := s.CheckNormalization(); err != nil {
		fmt.Fprintf(a.stderr, "syncfilter query: warning: %v; answers may be wrong for keys with characters new in one of the versions\n", err)
	}
	maybe, err := s.Image.MightContainBatch(make([]bool, 0, len(keys)), keys)
	if err != nil {
		return usagef("%v", err)
	}
	w := bufio.NewWriter(a.stdout)
	for i, k := range keys {
		verdict := "absent"
		if maybe[i] {
			verdict = "maybe"
		}
		a.answer(w, verdict, k, *nul)
	}
	return w.Flush()
}
