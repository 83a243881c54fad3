package rebuild

import (
	"context"
	"errors"
	"testing"
)

// TestEndedContextsSayTheirError: a call whose context ended fails with
// an error that is the context's (errors.Is), whichever path it takes
// (quiet, lookup, probe, bypass) and whatever the driver reports for an
// interrupted statement.
func TestEndedContextsSayTheirError(t *testing.T) {
	seed := ids("seed", 200)
	ix := open(t, appConfig(appDB(t, seed...)))
	cctx, cancel := context.WithCancelCause(context.Background())
	why := errors.New("the app gave up")
	cancel(why)
	for name, call := range map[string]func() error{
		"Fetched stored": func() error { _, err := ix.Fetched(cctx, seed[1]); return err },
		"Fetched new":    func() error { _, err := ix.Fetched(cctx, "never-1"); return err },
		"Fetched NFD":    func() error { _, err := ix.Fetched(cctx, "cafe\u0301"); return err },
		"Missing":        func() error { _, err := ix.Missing(cctx, append(seed[:5:5], "never-2", "cafe\u0301")); return err },
	} {
		if err := call(); !errors.Is(err, why) {
			t.Errorf("%s with an ended context = %v, want its cause", name, err)
		}
	}
}
