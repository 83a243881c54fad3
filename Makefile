# The two commands a newcomer needs: `make demo` runs the main job, `make test`
# runs every check that CI runs (.ci/run calls `make test` on a clean clone).
GO        ?= go
FUZZTIME  ?= 60s
SOAKTIME  ?= 10m
STATICCHECK_VERSION ?= v0.8.2
FUZZ_TARGETS = \
	./normalize:FuzzString \
	./syncfilter:FuzzKeyedSumMatchesReference \
	./snapshot:FuzzDecode \
	./rebuild/internal/store:FuzzKeyArrayRoundTrip

.PHONY: demo test no-binaries fmt-check vet portable race unicode-newer fixtures fixtures-check fuzz-short fuzz bench soak lint syncbench syncbench-loop syncbench-initial syncbench-cold syncbench-short

# The main job: seed a SQLite database, build a filter, sync pages of ids.
demo:
	$(GO) run ./cmd/syncfilter demo

test: no-binaries fmt-check vet portable fixtures-check unicode-newer race fuzz-short

# No build output in git: a tracked file that is an executable binary (ELF,
# Mach-O, a Windows PE) or has the executable bit without being a script
# (#!) fails the run. Build into bin/, which is ignored.
no-binaries:
	@bad=$$(git ls-files -s -z 2>/dev/null | tr '\0' '\n' | while read -r mode _ _ path; do \
		[ -f "$$path" ] || continue; \
		magic=$$(head -c 4 "$$path" | od -An -tx1 | tr -d ' \n'); \
		case "$$magic" in \
		7f454c46|cffaedfe|cefaedfe|feedfacf|feedface) echo "$$path"; continue;; \
		4d5a*) if head -c 512 "$$path" | grep -aq 'program cannot be run in DOS mode'; then echo "$$path"; continue; fi;; \
		esac; \
		if [ "$$mode" = 100755 ] && [ "$$(head -c 2 "$$path")" != '#!' ]; then echo "$$path"; fi; \
	done); \
	if [ -n "$$bad" ]; then echo "executable binaries tracked by git (git rm --cached them; build into bin/):"; echo "$$bad"; exit 1; fi

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
# against an exact reference, repeated.
soak:
	$(GO) test -race -count=20 -run 'Concurrent|Cancelled|Compacted' -timeout $(SOAKTIME) ./rebuild ./syncfilter

# Comparisons with other libraries live in the bench/ module (own go.mod);
# the gate's comparisons with plain database/sql are in ./rebuild.
bench:
	$(GO) test -run='^$$' -bench=. -benchmem ./...
	cd bench && $(GO) test -run='^$$' -bench=. -benchmem .

# Issue 20: what a sync engine feels (bench/syncbench, results in
# docs/BENCHMARKS.md). Minutes each, never part of make test. Base tables
# are built once and kept in $$SYNCBENCH_DIR (default
# $$TMPDIR/syncfilter-syncbench: 160 MB per million rows). One op of
# BenchmarkSyncLoop is one page: the library, one prepared IN-list and a
# prepared SELECT per id in turn, then the app's INSERT of the new ids.
SYNCBENCH_ROWS ?= 1000000
SYNCBENCH_COLD_ROWS ?= 1000000 5000000
SYNCBENCH_REPS ?= 9
syncbench: syncbench-loop syncbench-initial syncbench-cold

syncbench-loop:
	cd bench && SYNCBENCH_ROWS=$(SYNCBENCH_ROWS) $(GO) test -run '^$$' -bench 'SyncLoop/.*/page=100$$' -benchtime 300x -timeout 2h .
	cd bench && SYNCBENCH_ROWS=$(SYNCBENCH_ROWS) $(GO) test -run '^$$' -bench 'SyncLoop/.*/page=1000$$' -benchtime 100x -timeout 2h .
	cd bench && SYNCBENCH_ROWS=$(SYNCBENCH_ROWS) $(GO) test -run '^$$' -bench 'SyncLoop/.*/page=10000$$' -benchtime 30x -timeout 2h .
	cd bench && SYNCBENCH_ROWS=$(SYNCBENCH_ROWS) $(GO) test -run '^$$' -bench 'SyncFetched' -benchtime 3000x -timeout 2h .

# The initial sync: 200 pages of 1,000 new ids into an empty table, with
# no pause and with 100 and 300 ms per page (a network fetch), then the
# 1M-row sync (1,000 pages); add -csv FILE to plot a run.
syncbench-initial:
	cd bench && $(GO) run ./cmd/syncbench initial-sync -pages 200
	cd bench && $(GO) run ./cmd/syncbench initial-sync -pages 200 -sleep 100ms
	cd bench && $(GO) run ./cmd/syncbench initial-sync -pages 200 -sleep 300ms
	cd bench && $(GO) run ./cmd/syncbench initial-sync -pages 1000

# The cold start: fresh processes, warm page cache and the files' pages
# dropped (posix_fadvise DONTNEED), library and IN-list children alternating.
syncbench-cold:
	@set -e; for rows in $(SYNCBENCH_COLD_ROWS); do \
		(cd bench && $(GO) run ./cmd/syncbench cold-start -rows $$rows -reps $(SYNCBENCH_REPS) -modes lib,sql,lib-nosnap); \
	done

# Every harness at a small scale, in about a minute: a check that they run.
syncbench-short:
	cd bench && $(GO) test -count=1 ./syncbench
	cd bench && SYNCBENCH_ROWS=20000 $(GO) test -run '^$$' -bench 'Sync' -benchtime 5x .
	cd bench && $(GO) run ./cmd/syncbench initial-sync -pages 20
	cd bench && $(GO) run ./cmd/syncbench cold-start -rows 20000 -reps 2 -modes lib,sql,lib-nosnap

lint: fmt-check
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...
