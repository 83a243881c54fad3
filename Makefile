# The two commands a newcomer needs: `make demo` runs the main job, `make test`
# runs every check that CI runs (.ci/run calls `make test` on a clean clone).
GO        ?= go
FUZZTIME  ?= 60s
SOAKTIME  ?= 10m
INTERLEAVETIME ?= 60s
PROPERTYTIME ?= 2m
STATICCHECK_VERSION ?= v0.8.2
# package:target:executions of the short pass (a few seconds each here).
FUZZ_TARGETS = \
	./normalize:FuzzString:200000 \
	./syncfilter:FuzzKeyedSumMatchesReference:100000 \
	./snapshot:FuzzDecode:300000 \
	./rebuild/internal/store:FuzzKeyArrayRoundTrip:30000 \
	./rebuild/internal/store:FuzzPlainListRoundTrip:20000 \
	./rebuild/internal/store:FuzzParsePositions:80000

.PHONY: cli-sqlcipher cli-ncruces demo test adopt ucd-deps no-binaries fmt-check vet portable race drivers drivers-short stress unicode-newer fixtures fixtures-check fuzz-short fuzz bench soak lint syncbench syncbench-loop syncbench-initial syncbench-cold syncbench-short syncbench-real syncbench-ablation cross cross-deps

# The main job: seed a SQLite database, build a filter, sync pages of ids.
demo:
	$(GO) run ./cmd/syncfilter demo

test: ucd-deps no-binaries fmt-check vet lint portable fixtures-check unicode-newer race drivers-short fuzz-short adopt

# The Unicode Character Database of the pinned version (15.0.0, Debian's
# unicode-data) is what normalize/internal/compgen's test checks the
# composition table against and what normalize's TestUnicodeConformance
# runs (NormalizationTest.txt): those skip without it, except under make
# test, which installs it (Debian: apt-get, as root or with sudo) and
# makes a missing file a failure.
test: export SYNCFILTER_REQUIRE_UCD = 1
UCD_DEBS = unicode-data
ucd-deps:
	@if [ -n "$$SYNCFILTER_UCD" ] || [ -f /usr/share/unicode/NormalizationTest.txt.bz2 ]; then exit 0; fi; \
	if command -v dpkg-query >/dev/null; then \
		sudo=; [ "$$(id -u)" = 0 ] || sudo=sudo; \
		echo "installing $(UCD_DEBS)"; \
		$$sudo apt-get update -q && \
		$$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $(UCD_DEBS); \
	else \
		echo "make test needs the Unicode Character Database 15.0.0 in /usr/share/unicode (Debian: $(UCD_DEBS)) or SYNCFILTER_UCD naming its folder"; exit 1; \
	fi

# Adopting the library moves neither an app's go line nor its SQLite
# driver: each app in internal/adoptcheck/testdata (go 1.25.0, on
# modernc.org/sqlite v1.34.5 or on mattn/go-sqlite3 v1.14.28) takes this
# checkout through a replace, runs go mod tidy, builds, runs the README's
# loop on its own driver, and must keep its go.mod's go line and driver
# version. Local toolchain and the module proxy only; seconds once the
# module and build caches are warm.
adopt:
	GO=$(GO) bash internal/adoptcheck/run.sh

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
	GOWORK="$(CURDIR)/internal/ncruces/go.work" CGO_ENABLED=0 $(GO) vet github.com/syncfilter/syncfilter/internal/ncruces

# The packages that need no SQLite (normalize, syncfilter, snapshot,
# fixtures, ...) compile and vet, tests included, for the other platforms
# clients run on, and the library packages that do (rebuild, on the app's
# own driver) compile there without cgo, as an app on modernc.org/sqlite
# or ncruces/go-sqlite3 builds them. ios/arm64 links only with cgo
# (Xcode): there the library packages are compiled, not linked or vetted.
# `make cross` runs the tests on arm64 and s390x. The scalar hashing path
# (no assembly) passes the same tests on amd64.
NOSQL_PKGS = $(shell $(GO) list -f '{{.ImportPath}}{{range .Deps}} {{.}}{{end}}{{range .TestImports}} {{.}}{{end}}{{range .XTestImports}} {{.}}{{end}}' ./... | grep -v ' github.com/mattn/go-sqlite3\| github.com/syncfilter/syncfilter/internal/testdriver' | cut -d' ' -f1)
NOCGO_PKGS = $(NOSQL_PKGS)
LIB_PKGS = $(shell CGO_ENABLED=0 $(GO) list -f '{{if ne .Name "main"}}{{.ImportPath}}{{end}}' ./... | grep -v '/internal/testdriver$$')
PORTABLE_PLATFORMS = linux/arm64 linux/s390x windows/amd64 darwin/arm64
portable:
	@set -e; pkgs="$(NOSQL_PKGS)"; lib="$(LIB_PKGS)"; \
	for p in $(PORTABLE_PLATFORMS); do \
		echo "vet and build for $$p"; \
		GOOS=$${p%/*} GOARCH=$${p#*/} CGO_ENABLED=0 $(GO) vet $$pkgs; \
		GOOS=$${p%/*} GOARCH=$${p#*/} CGO_ENABLED=0 $(GO) build $$pkgs $$lib; \
	done; \
	echo "build for ios/arm64 (library packages)"; \
	GOOS=ios GOARCH=arm64 CGO_ENABLED=0 $(GO) build $$lib
	$(GO) test -tags purego -count=1 ./syncfilter ./snapshot

race:
	$(GO) test -race -count=1 ./...

# The rebuild package's behaviour tests with each SQLite driver, the app's
# connections and the library's on the same one (SYNCFILTER_TEST_DRIVER,
# internal/testdriver): mattn (the race run above), modernc.org/sqlite
# beside it, and github.com/ncruces/go-sqlite3 in a build without cgo,
# which also shows that a program on it builds with CGO_ENABLED=0 (mattn
# and ncruces register the same database/sql name: no build holds both).
# make test runs mattn and modernc; make drivers all three, without the
# race detector (a pure-Go SQLite under it runs ten times slower). mattn
# and modernc run at go.mod's floors, the oldest versions the library
# supports. ncruces asks for newer Go than go.mod's floor, so go.mod does
# not require it: its runs go through NCRUCES, the workspace
# internal/ncruces/go.work (the module there requires it) and an overlay
# that builds internal/testdriver/ncruces.go (see that file).
NCRUCES = set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	sed '1s|^//go:build ignore$$|//go:build !cgo \|\| syncfilter_nomattn|' internal/testdriver/ncruces.go >"$$tmp/ncruces.go"; \
	printf '{"Replace":{"%s":"%s"}}' "$(CURDIR)/internal/testdriver/ncruces.go" "$$tmp/ncruces.go" >"$$tmp/overlay.json"; \
	GOWORK="$(CURDIR)/internal/ncruces/go.work" CGO_ENABLED=0 SYNCFILTER_TEST_DRIVER=ncruces $(GO) test -overlay "$$tmp/overlay.json"
# SQLCipher (github.com/mutecomm/go-sqlcipher/v4, SQLite 3.33.0 without
# the JSON functions: the statements' plain dialect) is a fork of mattn,
# whose C symbols it shares: its runs build with -tags syncfilter_nomattn
# through SQLCIPHER, the workspace internal/sqlcipher/go.work and an
# overlay of internal/testdriver/sqlcipher.go, as ncruces' do. make test
# runs the behaviour tests in the plain dialect on mattn's SQLite
# (SYNCFILTER_TEST_PLAIN); make drivers runs every behaviour
# test on SQLCipher, TestEncrypted with its keys among them.
SQLCIPHER = set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	sed '1s|^//go:build ignore$$|//go:build cgo \&\& syncfilter_nomattn|' internal/testdriver/sqlcipher.go >"$$tmp/sqlcipher.go"; \
	printf '{"Replace":{"%s":"%s"}}' "$(CURDIR)/internal/testdriver/sqlcipher.go" "$$tmp/sqlcipher.go" >"$$tmp/overlay.json"; \
	GOWORK="$(CURDIR)/internal/sqlcipher/go.work" CGO_ENABLED=1 SYNCFILTER_TEST_DRIVER=sqlcipher $(GO) test -tags syncfilter_nomattn -overlay "$$tmp/overlay.json"
# The command on SQLCipher, bin/syncfilter-sqlcipher
# (cmd/syncfilter/driver_sqlcipher.go): an encrypted database's key in
# SYNCFILTER_CONN_PARAMS or a file named by SYNCFILTER_CONN_PARAMS_FILE.
cli-sqlcipher:
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	sed '1s|^//go:build ignore$$|//go:build cgo \&\& syncfilter_nomattn|' cmd/syncfilter/driver_sqlcipher.go >"$$tmp/driver.go"; \
	printf '{"Replace":{"%s":"%s"}}' "$(CURDIR)/cmd/syncfilter/driver_sqlcipher.go" "$$tmp/driver.go" >"$$tmp/overlay.json"; \
	GOWORK="$(CURDIR)/internal/sqlcipher/go.work" $(GO) build -tags syncfilter_nomattn -overlay "$$tmp/overlay.json" -o bin/syncfilter-sqlcipher ./cmd/syncfilter

# The command on ncruces with its encrypting VFSes, bin/syncfilter-ncruces
# (cmd/syncfilter/driver_ncruces.go), built with CGO_ENABLED=0.
cli-ncruces:
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	sed '1s|^//go:build ignore$$|//go:build !cgo \|\| syncfilter_nomattn|' cmd/syncfilter/driver_ncruces.go >"$$tmp/driver.go"; \
	printf '{"Replace":{"%s":"%s"}}' "$(CURDIR)/cmd/syncfilter/driver_ncruces.go" "$$tmp/driver.go" >"$$tmp/overlay.json"; \
	GOWORK="$(CURDIR)/internal/ncruces/go.work" CGO_ENABLED=0 $(GO) build -overlay "$$tmp/overlay.json" -o bin/syncfilter-ncruces ./cmd/syncfilter

drivers-short:
	SYNCFILTER_TEST_DRIVER=modernc $(GO) test -count=1 ./rebuild/... ./internal/sqlitecode
	SYNCFILTER_TEST_PLAIN=1 $(GO) test -count=1 ./rebuild/...

drivers: drivers-short
	SYNCFILTER_TEST_DRIVER=mattn $(GO) test -count=1 ./rebuild/... ./internal/sqlitecode
	@$(NCRUCES) -count=1 ./rebuild/... ./internal/sqlitecode
	@$(SQLCIPHER) -count=1 ./rebuild/... ./internal/sqlitecode
	GOWORK="$(CURDIR)/internal/sqlcipher/go.work" CGO_ENABLED=1 $(GO) test -count=1 github.com/syncfilter/syncfilter/internal/sqlcipher
	GOWORK="$(CURDIR)/internal/ncruces/go.work" CGO_ENABLED=0 $(GO) test -count=1 github.com/syncfilter/syncfilter/internal/ncruces

# The app and the library in one process under load, with each driver, in
# WAL and DELETE mode, the library given the app's driver or its *sql.DB:
# each of the four runs for STRESSTIME and until every event of the app's
# life happened at least once (a Save, a Rebuild, an automatic rebuild, a
# Close and OpenDB again; at most a minute more). make test runs 2 s of
# each inside the behaviour tests.
STRESSTIME ?= 2m
stress:
	SYNCFILTER_STRESS_TIME=$(STRESSTIME) SYNCFILTER_TEST_DRIVER=mattn $(GO) test -count=1 -v -run '^TestOneSQLiteUnderStress$$' -timeout 0 ./rebuild
	SYNCFILTER_STRESS_TIME=$(STRESSTIME) SYNCFILTER_TEST_DRIVER=modernc $(GO) test -count=1 -v -run '^TestOneSQLiteUnderStress$$' -timeout 0 ./rebuild
	@export SYNCFILTER_STRESS_TIME=$(STRESSTIME); $(NCRUCES) -count=1 -v -run '^TestOneSQLiteUnderStress$$' -timeout 0 ./rebuild
	@export SYNCFILTER_STRESS_TIME=$(STRESSTIME) SYNCFILTER_STRESS_VFS=adiantum; $(NCRUCES) -count=1 -v -run '^TestOneSQLiteUnderStress$$' -timeout 0 ./rebuild
	@export SYNCFILTER_STRESS_TIME=$(STRESSTIME); $(SQLCIPHER) -count=1 -v -run '^TestOneSQLiteUnderStress$$' -timeout 0 ./rebuild

# The canonical form is NFC as of Unicode 15.0.0 (normalize.PinnedUnicode).
# Go 1.27 builds golang.org/x/text from v0.34.0 on with Unicode 17.0.0
# tables (go.mod's floor has only 15.0.0 ones): with those, through a copy
# of go.mod that asks for NEWER_TEXT, the same tests and fixtures must
# pass, byte for byte. The go command fetches that toolchain from the Go
# module proxy (about 76 MB, once per machine).
NEWER_GO ?= go1.27.3
NEWER_TEXT ?= v0.44.0
unicode-newer:
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	cp go.mod go.sum "$$tmp"/; \
	GOTOOLCHAIN=$(NEWER_GO) $(GO) get -modfile="$$tmp/go.mod" golang.org/x/text@$(NEWER_TEXT); \
	SYNCFILTER_WANT_TABLES=17.0.0 GOTOOLCHAIN=$(NEWER_GO) $(GO) test -modfile="$$tmp/go.mod" -count=1 ./normalize/... ./syncfilter ./snapshot ./fixtures; \
	GOTOOLCHAIN=$(NEWER_GO) $(GO) run -modfile="$$tmp/go.mod" ./cmd/fixturegen -out fixtures -check

# Regenerate the fixtures of every format version (refuses to change released
# files), or check byte for byte that this code still produces them.
fixtures:
	$(GO) run ./cmd/fixturegen -out fixtures

fixtures-check:
	$(GO) run ./cmd/fixturegen -out fixtures -check

# A few seconds of each fuzz target inside `make test`; `make fuzz` runs longer.
# The short pass counts executions rather than seconds: go1.26's coordinator
# can report a bare "context deadline exceeded" when a -fuzztime duration
# ends while a worker is mid-call (golang/go#75804), which a count never does.
fuzz-short:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; rest=$${t#*:}; name=$${rest%%:*}; n=$${rest##*:}; \
		echo "fuzz $$pkg $$name for $${n} executions"; \
		$(GO) test -run='^$$' -fuzz="^$$name$$" -fuzztime=$${n}x $$pkg; \
	done

fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; rest=$${t#*:}; name=$${rest%%:*}; \
		echo "fuzz $$pkg $$name for $(FUZZTIME)"; \
		$(GO) test -run='^$$' -fuzz="^$$name$$" -fuzztime=$(FUZZTIME) $$pkg; \
	done

# Longer concurrency runs than make test's: markers, askers and rebuilds
# against an exact reference, repeated; every public method at once, in
# random orders, for INTERLEAVETIME per run; random pages of random key
# spellings through every path for PROPERTYTIME (a failure prints its seed).
soak:
	$(GO) test -race -count=20 -run 'Concurrent|Cancelled|Compacted' -timeout $(SOAKTIME) ./rebuild ./syncfilter
	SYNCFILTER_INTERLEAVE_TIME=$(INTERLEAVETIME) $(GO) test -race -count=5 -run 'TestInterleavedCalls|NeverWaitForTheAppsWriters' -timeout $(SOAKTIME) ./rebuild
	SYNCFILTER_PROPERTY_TIME=$(PROPERTYTIME) $(GO) test -count=1 -run '^TestKeysProperty$$' -timeout $(SOAKTIME) ./rebuild

# Comparisons with other libraries live in the bench/ module (own go.mod);
# the gate's comparisons with plain database/sql are in ./rebuild.
bench:
	$(GO) test -run='^$$' -bench=. -benchmem ./...
	cd bench && $(GO) test -run='^$$' -bench=. -benchmem .

# What a sync engine feels (bench/syncbench, results in
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
	cd bench && $(GO) vet -tags modernc ./syncbench ./cmd/syncbench
	cd bench && $(GO) vet -tags syncfilter_nomattn ./syncbench ./cmd/syncbench
	cd bench && SYNCBENCH_ROWS=20000 $(GO) test -run '^$$' -bench 'Sync' -benchtime 5x .
	cd bench && $(GO) run ./cmd/syncbench initial-sync -pages 20
	cd bench && $(GO) run ./cmd/syncbench cold-start -rows 20000 -reps 2 -modes lib,sql,lib-nosnap,lib-pool,sql-pool
	cd bench && $(GO) run ./cmd/syncbench real -rows 20000 -pages 24 -min 10 -max 200 -fixed 10 -waits 0,1ms -after 0,0.5
	cd bench && $(GO) run ./cmd/syncbench real -rows 20000 -pages 24 -min 10 -max 200 -waits 0 -after 0 -baseline stored-only
	cd bench && $(GO) test -count=1 -tags syncfilter_ablate -run Ablation ./syncbench
	cd bench && $(GO) run -tags syncfilter_ablate ./cmd/syncbench ablation -rows 20000 -pages 24 -min 10 -max 200 -waits 0 -after 0,0.5 -off follower,lookup
	cd bench && $(GO) run ./cmd/syncbench real-initial -rows 5000 -waits 0
	cd bench && $(GO) run ./cmd/syncbench real-single -rows 20000 -ops 100 -waits 0
	cd bench && $(GO) run ./cmd/syncbench real-collections -rows 20000 -reps 2

# The real sync loop, what a sync engine's user feels (bench/syncbench,
# real*.go; every call into the library is in lib.go): the loop runs in
# child processes the harness re-execs, on the app's own pool, with an
# ADD COLUMN, a 12-step table rebuild and an exit without Close in the
# middle of each run; a wrong answer from either side fails the run.
# Every run is made twice (the library first on every page, then the
# IN-list first), with the INSERTs right before the next call (after 0)
# and half the wait after them (0.5); pages of 10 to 1,000 ids, and
# SYNCBENCH_REAL_FIXED=10,100 adds runs of those fixed sizes.
# Then the initial sync, the cold start of the app's pool shape, ten
# collections and single ids. 3 GB of disk at the defaults (base tables
# kept in $$SYNCBENCH_DIR, as above); the loop took 6 minutes at 300,000
# rows and 400 pages on 2 cores, the defaults several times that.
# SYNCBENCH_DRIVER=modernc builds with -tags modernc (modernc beside
# mattn), ncruces with -tags syncfilter_nomattn (ncruces in place of
# mattn: both register "sqlite3"), sqlcipher with -tags
# syncfilter_nomattn,syncfilter_sqlcipher (every database encrypted, a
# raw key; the bench module requires go-sqlcipher/v4), ncruces-adiantum
# with syncfilter_nomattn,syncfilter_adiantum (encrypted by adiantum).
SYNCBENCH_DRIVER ?= mattn
SYNCBENCH_REAL_ROWS ?= 1000000
SYNCBENCH_REAL_PAGES ?= 1500
SYNCBENCH_REAL_WAITS ?= 0,5ms,20ms-50ms
SYNCBENCH_REAL_AFTER ?= 0,0.5
SYNCBENCH_REAL_FIXED ?=
SYNCBENCH_COLLECTION_ROWS ?= 1000000
SYNCBENCH_TAGS = $(if $(filter modernc,$(SYNCBENCH_DRIVER)),-tags modernc)$(if $(filter ncruces,$(SYNCBENCH_DRIVER)),-tags syncfilter_nomattn)$(if $(filter sqlcipher,$(SYNCBENCH_DRIVER)),-tags syncfilter_nomattn$(comma)syncfilter_sqlcipher)$(if $(filter ncruces-adiantum,$(SYNCBENCH_DRIVER)),-tags syncfilter_nomattn$(comma)syncfilter_adiantum)
SYNCBENCH_REAL = cd bench && $(GO) run $(SYNCBENCH_TAGS) ./cmd/syncbench
syncbench-real:
	$(SYNCBENCH_REAL) real -driver $(SYNCBENCH_DRIVER) -rows $(SYNCBENCH_REAL_ROWS) -pages $(SYNCBENCH_REAL_PAGES) -waits $(SYNCBENCH_REAL_WAITS) -after $(SYNCBENCH_REAL_AFTER) -fixed '$(SYNCBENCH_REAL_FIXED)' -v
	$(SYNCBENCH_REAL) real-initial -driver $(SYNCBENCH_DRIVER) -rows 200000 -waits 0,100ms
	@set -e; for rows in $(SYNCBENCH_COLD_ROWS); do \
		($(SYNCBENCH_REAL) cold-start -driver $(SYNCBENCH_DRIVER) -rows $$rows -reps $(SYNCBENCH_REPS) -modes lib-pool,sql-pool -md); \
	done
	$(SYNCBENCH_REAL) real-collections -driver $(SYNCBENCH_DRIVER) -rows $(SYNCBENCH_COLLECTION_ROWS)
	$(SYNCBENCH_REAL) real-single -driver $(SYNCBENCH_DRIVER) -rows $(SYNCBENCH_REAL_ROWS) -waits 0,5ms

# The ablation: the real loop's mixed pages (as twins) with nothing
# switched off in the library, then with each speed mechanism off in
# turn (children of a binary built with -tags syncfilter_ablate read
# SYNCFILTER_ABLATE), waits 0, 5 ms and 20-50 ms, after 0 and 0.5: the
# median ratios and each mechanism's win. About 20 minutes on 2 cores.
SYNCBENCH_ABLATION_ROWS ?= 300000
SYNCBENCH_ABLATION_PAGES ?= 400
comma := ,
SYNCBENCH_ABLATION_TAGS = syncfilter_ablate$(if $(filter modernc,$(SYNCBENCH_DRIVER)),$(comma)modernc)$(if $(filter ncruces,$(SYNCBENCH_DRIVER)),$(comma)syncfilter_nomattn)$(if $(filter sqlcipher,$(SYNCBENCH_DRIVER)),$(comma)syncfilter_nomattn$(comma)syncfilter_sqlcipher)
syncbench-ablation:
	cd bench && $(GO) run -tags $(SYNCBENCH_ABLATION_TAGS) ./cmd/syncbench ablation -driver $(SYNCBENCH_DRIVER) -rows $(SYNCBENCH_ABLATION_ROWS) -pages $(SYNCBENCH_ABLATION_PAGES) -waits 0,5ms,20ms-50ms -after 0,0.5 -v

lint: fmt-check
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

# The tests on the CPUs sync clients run on, under qemu-user: arm64
# (phones, Apple silicon; little-endian like amd64, but without the amd64
# assembly kernels) and s390x, which is big-endian, while snapshots,
# fixtures and vectors are little-endian by specification.
# - The packages that build without cgo (normalize, syncfilter's portable
#   path, snapshot, fixtures with the known-answer and conformance vectors,
#   cmd/fixturegen's byte-for-byte check of fixtures/v1 and v2) on linux/arm64
#   and linux/s390x.
# - rebuild and cmd/syncfilter built for linux/arm64 with cgo
#   (aarch64-linux-gnu-gcc compiles the SQLite driver's C).
# All with -short: it skips what is slow under emulation and checks
# nothing that depends on the CPU, each run natively by make test:
# Unicode 15.0.0's NFC over 6.7M strings, 2 GiB sparse files hashed by
# snapshot and the CLI, 3M keys streamed through the CLI under a memory
# limit (under qemu that would measure the emulator), the cron job killed
# on 100k rows, and rebuild's compaction race; snapshot's error-kind test
# samples the payload's bit flips. A new test that is slow under emulation
# skips itself when testing.Short(): no list of test names to keep in step
# with renames.
# A test's child processes (itself again, or the binary it built) run
# through the same emulator: internal/testexec, SYNCFILTER_TEST_EXEC.
# Every skip is printed with its reason. Packages are installed first if
# missing (Debian: apt-get, as root or with sudo).
# Measured here (2 cores shared with other jobs, load average 7 to 9):
# cold (packages missing, empty GOCACHE) 7.0 min, of which apt-get 12 s;
# warm 3.5 min; CPU time 5.2 and 2.8 min. Running the three steps in
# parallel (make -j) was slower: each then compiles the same packages.
CROSS_DEBS = qemu-user gcc-aarch64-linux-gnu libc6-dev-arm64-cross
CROSS_TOOLS = qemu-aarch64 qemu-s390x aarch64-linux-gnu-gcc
CGO_PKGS = ./rebuild ./cmd/syncfilter
QEMU_arm64 = qemu-aarch64
QEMU_s390x = qemu-s390x
CGO_arm64 = CC=aarch64-linux-gnu-gcc QEMU_LD_PREFIX=/usr/aarch64-linux-gnu

cross: cross-deps
	$(call cross_test,arm64,CGO_ENABLED=0,$(NOCGO_PKGS))
	$(call cross_test,s390x,CGO_ENABLED=0,$(NOCGO_PKGS))
	$(call cross_test,arm64,CGO_ENABLED=1 $(CGO_arm64),$(CGO_PKGS))

# cross_test(GOARCH, environment, packages): go test -short under qemu,
# printing the verbose output without the lines of passing tests, so that
# failures, skips with their reasons, logs and package results remain.
define cross_test
	@echo "== linux/$(1), $(2)"
	@log=$$(mktemp); start=$$(date +%s); \
	SYNCFILTER_TEST_EXEC=$(QEMU_$(1)) GOOS=linux GOARCH=$(1) $(2) \
		$(GO) test -exec $(QEMU_$(1)) -short -count=1 -v $(3) >$$log 2>&1; status=$$?; \
	grep -vE '^ *(=== (RUN|PAUSE|CONT|NAME) |--- PASS: |PASS$$)' $$log; rm -f $$log; \
	echo "== linux/$(1), $(2): $$(( $$(date +%s) - start )) s"; exit $$status
endef

cross-deps:
	@if command -v dpkg-query >/dev/null; then \
		missing=; for p in $(CROSS_DEBS); do \
			dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q ' installed$$' || missing="$$missing $$p"; \
		done; \
		if [ -n "$$missing" ]; then \
			sudo=; [ "$$(id -u)" = 0 ] || sudo=sudo; \
			echo "installing$$missing"; start=$$(date +%s); \
			$$sudo apt-get update -q && \
			$$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing && \
			echo "installed in $$(( $$(date +%s) - start )) s"; \
		fi; \
	else \
		for c in $(CROSS_TOOLS); do \
			command -v $$c >/dev/null || { echo "make cross needs $(CROSS_TOOLS) and arm64 C headers (Debian: $(CROSS_DEBS))"; exit 1; }; \
		done; \
	fi
