# The two commands a newcomer needs: `make demo` runs the main job, `make test`
# runs every check that CI runs (.ci/run calls `make test` on a clean clone).
GO        ?= go
FUZZTIME  ?= 60s
SOAKTIME  ?= 10m
INTERLEAVETIME ?= 60s
STATICCHECK_VERSION ?= v0.8.2
FUZZ_TARGETS = \
	./normalize:FuzzString \
	./syncfilter:FuzzKeyedSumMatchesReference \
	./snapshot:FuzzDecode \
	./rebuild/internal/store:FuzzKeyArrayRoundTrip

.PHONY: demo test fmt-check vet portable race unicode-newer fixtures fixtures-check fuzz-short fuzz bench soak lint

# The main job: seed a SQLite database, build a filter, sync pages of ids.
demo:
	$(GO) run ./cmd/syncfilter demo

test: fmt-check vet portable fixtures-check unicode-newer race fuzz-short

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...
	cd bench && $(GO) vet ./...

# The pure-Go packages build for other platforms, and the scalar hashing
# path (no AVX2 assembly) passes the same tests.
portable:
	GOARCH=arm64 $(GO) vet ./normalize ./syncfilter/... ./snapshot
	GOOS=windows $(GO) vet ./normalize ./syncfilter/... ./snapshot
	$(GO) test -tags purego -count=1 ./syncfilter ./snapshot

race:
	$(GO) test -race -count=1 ./...

# The canonical form is NFC as of Unicode 15.0.0 (normalize.PinnedUnicode).
# Go 1.27 builds golang.org/x/text with Unicode 17.0.0 tables: the same
# tests and fixtures must pass there, byte for byte. The go command fetches
# that toolchain from the Go module proxy (about 76 MB, once per machine).
NEWER_GO ?= go1.27.3
unicode-newer:
	GOTOOLCHAIN=$(NEWER_GO) $(GO) test -count=1 ./normalize/... ./syncfilter ./snapshot ./fixtures
	GOTOOLCHAIN=$(NEWER_GO) $(GO) run ./cmd/fixturegen -out fixtures -check

# Regenerate the fixtures of the current format version (refuses to change
# released files), or check byte for byte that this code still produces them.
fixtures:
	$(GO) run ./cmd/fixturegen -out fixtures

fixtures-check:
	$(GO) run ./cmd/fixturegen -out fixtures -check

# A few seconds of each fuzz target inside `make test`; `make fuzz` runs longer.
fuzz-short:
	@$(MAKE) --no-print-directory fuzz FUZZTIME=5s

fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz $$pkg $$name for $(FUZZTIME)"; \
		$(GO) test -run='^$$' -fuzz="^$$name$$" -fuzztime=$(FUZZTIME) $$pkg; \
	done

# Longer concurrency runs than make test's: markers, askers and rebuilds
# against an exact reference, repeated; every public method at once, in
# random orders, for INTERLEAVETIME per run (a failure prints its seed).
soak:
	$(GO) test -race -count=20 -run 'Concurrent|Cancelled|Compacted' -timeout $(SOAKTIME) ./rebuild ./syncfilter
	SYNCFILTER_INTERLEAVE_TIME=$(INTERLEAVETIME) $(GO) test -race -count=5 -run 'RandomInterleavings|NeverWaitForTheAppsWriters' -timeout $(SOAKTIME) ./rebuild

# Comparisons with other libraries live in the bench/ module (own go.mod);
# the gate's comparisons with plain database/sql are in ./rebuild.
bench:
	$(GO) test -run='^$$' -bench=. -benchmem ./...
	cd bench && $(GO) test -run='^$$' -bench=. -benchmem .

lint: fmt-check
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...
