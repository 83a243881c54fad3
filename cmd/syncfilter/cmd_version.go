package main

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/syncfilter/syncfilter/normalize"
	"github.com/syncfilter/syncfilter/snapshot"
)

// sqliteVersion is the version of the SQLite the command links (set by
// the file of its driver: sqlite_mattn.go, driver_sqlcipher.go).
var sqliteVersion = func() string { return "" }

// versionInfo is the JSON form of `version --json`.
type versionInfo struct {
	Module         string `json:"module"`
	Version        string `json:"version"`
	Revision       string `json:"revision,omitempty"`
	RevisionTime   string `json:"revision_time,omitempty"`
	Modified       bool   `json:"modified,omitempty"`
	Go             string `json:"go"`
	FormatsRead    []int  `json:"formats_read"`
	FormatWritten  int    `json:"format_written"`
	Normalization  string `json:"normalization"`
	UnicodeVersion string `json:"unicode_version"`
	UnicodeTables  string `json:"unicode_tables"`
	SQLite         string `json:"sqlite"`
}

func buildVersion() versionInfo {
	v := versionInfo{Module: "github.com/syncfilter/syncfilter", Version: "(devel)", Go: runtime.Version(),
		FormatWritten: int(snapshot.MaxVersion), Normalization: normalize.Policy, UnicodeVersion: normalize.UnicodeVersion(),
		UnicodeTables: normalize.TablesVersion()}
	for f := snapshot.MinVersion; f <= snapshot.MaxVersion; f++ {
		v.FormatsRead = append(v.FormatsRead, int(f))
	}
	v.SQLite = sqliteVersion()
	if bi, ok := debug.ReadBuildInfo(); ok {
		v.Module = bi.Main.Path
		if bi.Main.Version != "" {
			v.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Revision = s.Value
			case "vcs.time":
				v.RevisionTime = s.Value
			case "vcs.modified":
				v.Modified = s.Value == "true"
			}
		}
	}
	return v
}

func (a *app) version(_ context.Context, args []string) error {
	fs := a.flags("version")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := exactly(pos, 0, "no arguments"); err != nil {
		return err
	}
	v := buildVersion()
	if *asJSON {
		return json.NewEncoder(a.stdout).Encode(v)
	}
	rev := v.Revision
	if rev == "" {
		rev = "unknown"
	} else if v.Modified {
		rev += " (modified)"
	}
	fmt.Fprintf(a.stdout, "syncfilter %s\n", v.Version)
	fmt.Fprintf(a.stdout, "module         %s\n", v.Module)
	fmt.Fprintf(a.stdout, "revision       %s %s\n", rev, v.RevisionTime)
	fmt.Fprintf(a.stdout, "go             %s\n", v.Go)
	fmt.Fprintf(a.stdout, "snapshots      reads format %v, writes format %d\n", v.FormatsRead, v.FormatWritten)
	fmt.Fprintf(a.stdout, "normalization  %s, Unicode %s (tables %s)\n", v.Normalization, v.UnicodeVersion, v.UnicodeTables)
	fmt.Fprintf(a.stdout, "sqlite         %s\n", v.SQLite)
	return nil
}
