//go:build syncfilter_ablate

package rebuild

import (
	"fmt"
	"os"
	"strings"
)

// Builds with the syncfilter_ablate tag (the ablation benchmark, never a
// production build) read SYNCFILTER_ABLATE, a comma-separated list of the
// speed mechanisms to switch off on every database the process opens.
func ablateDefaults(k *knobs) {
	for _, name := range strings.Split(os.Getenv("SYNCFILTER_ABLATE"), ",") {
		switch strings.TrimSpace(name) {
		case "":
		case "follower":
			k.noFollow = true
		case "apppool":
			k.noAppPool = true
		case "deferredload":
			k.noDeferredLoad = true
		case "deferredrepair":
			k.noDeferredRepair = true
		case "lookup":
			k.noLookup = true
		case "prepare":
			k.noPrepare = true
		case "catalog":
			k.noCatalog = true
		case "walk":
			k.noWalk = true
		default:
			panic(fmt.Sprintf("SYNCFILTER_ABLATE: no mechanism %q", name))
		}
	}
}
