//go:build syncfilter_ablate

package syncbench

// AblateBuild reports whether this binary was built with -tags
// syncfilter_ablate, so that the library reads SYNCFILTER_ABLATE.
const AblateBuild = true
