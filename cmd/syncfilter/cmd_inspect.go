package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"time"

	"github.com/syncfilter/syncfilter/snapshot"
	"github.com/syncfilter/syncfilter/syncfilter"
)

// inspection is the JSON form of `inspect --json`. The names are a
// contract: scripts read them.
type inspection struct {
	FormatVersion  int     `json:"format_version"`
	M              uint64  `json:"m"`
	K              uint32  `json:"k"`
	Layout         string  `json:"layout"`
	Hash           string  `json:"hash"`
	Normalization  string  `json:"normalization"`
	UnicodeVersion string  `json:"unicode_version"`
	DatasetID      string  `json:"dataset_id"`
	Generation     uint64  `json:"generation"`
	Items          uint64  `json:"items"`
	Capacity       uint64  `json:"capacity"`
	Created        string  `json:"created"`
	FillRatio      float64 `json:"fill_ratio"`
	EstimatedFPR   float64 `json:"estimated_fpr"`
	EstimatedItems float64 `json:"estimated_items"`
	Bytes          uint64  `json:"bytes"`
	Compatible     bool    `json:"compatible"`
	Incompatible   string  `json:"incompatible,omitempty"`
}

func (a *app) inspect(_ context.Context, args []string) error {
	fs := a.flags("inspect")
	asJSON := fs.Bool("json", false, "print JSON")
	path, s, st, err := oneSnapshot(fs, args)
	if err != nil {
		return err
	}
	in := inspection{
		FormatVersion: int(s.Version), M: s.Params.M, K: s.Params.K,
		Layout: s.Params.Layout.String(), Hash: s.Params.Hash.String(),
		Normalization: s.Policy, UnicodeVersion: s.UnicodeVersion,
		DatasetID: hex.EncodeToString(s.DatasetID[:]), Generation: s.Generation,
		Items: s.Items, Capacity: s.Capacity, Created: s.Created.Format(time.RFC3339Nano),
		FillRatio: st.FillRatio, EstimatedFPR: st.EstimatedFPR, EstimatedItems: st.EstimatedItems,
		Bytes: s.Size(), Compatible: true,
	}
	if err := s.CheckNormalization(); err != nil {
		in.Compatible, in.Incompatible = false, err.Error()
	}
	if *asJSON {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(in)
	}
	w := a.stdout
	fmt.Fprintf(w, "file            %s\n", path)
	fmt.Fprintf(w, "format version  %d\n", in.FormatVersion)
	fmt.Fprintf(w, "layout          %s, %s\n", in.Layout, in.Hash)
	fmt.Fprintf(w, "m, k            %d bits (%s), k = %d\n", in.M, size(in.M/8), in.K)
	fmt.Fprintf(w, "normalization   %s, Unicode %s\n", in.Normalization, in.UnicodeVersion)
	fmt.Fprintf(w, "dataset         %s, generation %d\n", in.DatasetID, in.Generation)
	fmt.Fprintf(w, "items           %d inserted (about %.0f distinct), sized for %d\n", in.Items, in.EstimatedItems, in.Capacity)
	fmt.Fprintf(w, "health          fill %.1f%%, estimated false-positive rate %.3g%%\n", 100*in.FillRatio, 100*in.EstimatedFPR)
	fmt.Fprintf(w, "created         %s\n", in.Created)
	fmt.Fprintf(w, "bytes           %d\n", in.Bytes)
	if !in.Compatible {
		fmt.Fprintf(w, "warning         %s\n", in.Incompatible)
	}
	return nil
}

// verify checks a snapshot to its last byte, streaming, and exits 3 for
// one this build would refuse to use (another normalization policy or
// Unicode version), with the reason.
func (a *app) verify(_ context.Context, args []string) error {
	path, h, _, err := oneSnapshot(a.flags("verify"), args)
	if err != nil {
		return err
	}
	if err := h.CheckNormalization(); err != nil {
		return fmt.Errorf("%s is intact but unusable here: %w", path, err)
	}
	fmt.Fprintf(a.stdout, "ok\t%s: format %d, %d items, generation %d\n", path, h.Version, h.Items, h.Generation)
	return nil
}

// oneSnapshot parses args for a command taking one snapshot FILE and
// verifies it completely, streaming: memory stays constant whatever the
// file claims.
func oneSnapshot(fs *flag.FlagSet, args []string) (string, snapshot.Header, syncfilter.Stats, error) {
	pos, err := parse(fs, args)
	if err != nil {
		return "", snapshot.Header{}, syncfilter.Stats{}, err
	}
	if err := exactly(pos, 1, "one snapshot FILE"); err != nil {
		return "", snapshot.Header{}, syncfilter.Stats{}, err
	}
	h, st, _, err := snapshot.VerifyFile(pos[0])
	return pos[0], h, st, err
}

// size formats a byte count.
func size(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
