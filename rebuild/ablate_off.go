//go:build !syncfilter_ablate

package rebuild

// ablateDefaults switches nothing off outside the ablation benchmark's
// builds (ablate.go).
func ablateDefaults(*knobs) {}
