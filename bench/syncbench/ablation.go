package syncbench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
)

// EnvAblate is what a library built with -tags syncfilter_ablate reads:
// a comma-separated list of Mechanisms to switch off.
const EnvAblate = "SYNCFILTER_ABLATE"

// Mechanisms are the library's speed mechanisms the ablation switches
// off one at a time (rebuild/ablate.go).
var Mechanisms = []string{"follower", "apppool", "deferredload", "deferredrepair", "lookup", "prepare", "catalog", "walk"}

// checkAblation returns EnvAblate as this process reads it, or an error
// if it is not want or the binary's library would not read it.
func checkAblation(want string) (string, error) {
	got := os.Getenv(EnvAblate)
	if got != want {
		return got, fmt.Errorf("%s=%q, the run switches off %q", EnvAblate, got, want)
	}
	if got != "" && !AblateBuild {
		return got, fmt.Errorf("%s=%q, but this binary was built without -tags syncfilter_ablate: the library would switch nothing off", EnvAblate, got)
	}
	return got, nil
}

// AblationRow is one mechanism switched off ("": none) and its runs.
type AblationRow struct {
	Off   string
	Twins []*RealTwins
}

// Ablation runs every config of cfgs as twins with nothing switched off
// and with each mechanism of off switched off in turn, the mechanisms
// taking turns within each config so that drift spreads over them all.
func (rr RealRunner) Ablation(ctx context.Context, variant string, cfgs []RealConfig, off []string) ([]AblationRow, error) {
	if !AblateBuild {
		return nil, errors.New("ablation: this binary was built without -tags syncfilter_ablate (make syncbench-ablation)")
	}
	if v := os.Getenv(EnvAblate); v != "" {
		return nil, fmt.Errorf("ablation: %s=%q in the environment: leave it unset, the ablation sets it per child", EnvAblate, v)
	}
	for _, m := range off {
		if !slices.Contains(Mechanisms, m) {
			return nil, fmt.Errorf("ablation: no mechanism %q: want some of %s", m, strings.Join(Mechanisms, ","))
		}
	}
	rows := []AblationRow{{Off: ""}}
	for _, m := range off {
		rows = append(rows, AblationRow{Off: m})
	}
	for _, cfg := range cfgs {
		for i := range rows {
			cfg.Ablate = rows[i].Off
			tw, err := rr.Twins(ctx, variant, cfg)
			if err != nil {
				return nil, fmt.Errorf("ablation, %s off: %w", rows[i].nameOf(), err)
			}
			rows[i].Twins = append(rows[i].Twins, tw)
		}
	}
	return rows, nil
}

func (r AblationRow) nameOf() string {
	if r.Off == "" {
		return "none"
	}
	return r.Off
}
