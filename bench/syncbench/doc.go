// Package syncbench measures the library the way a sync engine uses it,
// against what the engine would write without it.
//
// # What is measured
//
//   - The sync loop (Loop, BenchmarkSyncLoop and BenchmarkSyncFetched in
//     package bench): pages of server ids asked of the library's
//     Missing, of one prepared IN-list and of a prepared SELECT per id,
//     in turn inside one loop, the side that goes first rotating page by
//     page; between pages the app stores the page's new ids with its own
//     INSERTs on its own connection (App), so the next page sees them.
//   - The initial sync (InitialSync): an empty table filled page by page
//     with new ids, only Missing from the library, and what its Stats
//     say after every page: rate, bypass, rebuilds.
//   - The cold start (ColdStart, ColdChild): fresh processes from exec
//     to the first answer, with the files in the page cache and with
//     their pages dropped (DropCache: posix_fadvise DONTNEED, checked
//     with mincore by Resident); the pool modes open the app's pool
//     first and ask the library through lib.go.
//   - The real sync loop (RealRunner, RealChild; real*.go): the loop in
//     child processes the harness re-execs, on the app's own pool
//     (AppPool), four kinds of pages taking turns (Pages), a network wait
//     around the app's INSERTs, migrations and an exit without Close in
//     the middle; every answer of both sides judged against a Reference.
//     Each run is made twice (RealTwins), so that each side is timed as
//     the first call after the app's commit. With RealConfig.StoredOnly
//     the IN-list binds only the page's stored ids: a reference point,
//     not an alternative. Its extra rows: the initial
//     sync (InitialConfig), ten collections (RealCollections) and single
//     ids (RealSingle).
//   - The ablation (RealRunner.Ablation): the real loop with each of the
//     library's speed mechanisms switched off in turn, in children of a
//     binary built with -tags syncfilter_ablate (AblateBuild, EnvAblate).
//
// # The library's API
//
// Every harness, and the benchmarks of package bench, call the library
// only through lib.go (LibIndex, LibDB, BuildLibSnapshot), which hands
// the harness one answer per position and times the library's call
// alone; events.go takes the library's log (DBConfig.Logger) for what
// its Stats do not say. A change of the library's API changes those
// files. The app's driver is a Driver value; modernc.org/sqlite is
// linked only with -tags modernc, and github.com/ncruces/go-sqlite3 in
// place of mattn with CGO_ENABLED=0 or -tags syncfilter_nomattn
// (driver_*.go).
//
// # Notation
//
// "Library" is rebuild.Index with the default DBConfig and Source (Path, Table,
// Column, Snapshot). "IN-list" is `SELECT id FROM records WHERE id IN (?,
// …)`, prepared once per page size; "per id" is `SELECT 1 FROM records
// WHERE id = ?`; both normalize ids with golang.org/x/text's NFC first.
// Ratios are library ÷ baseline, of medians over pages (or totals where
// said); in the real loop, medians of per-page ratios of twins.
//
// # Tables
//
// BaseDB builds the app's table, records(id TEXT PRIMARY KEY, body
// TEXT), once per id shape and row count, its rows written in a seeded
// random order as ids reach an app, and keeps it in CacheDir;
// PrepareCopy copies it and builds its snapshot with
// ops.BuildSnapshot, as the cron job or the app's last run leaves it.
//
// # Running
//
// The Makefile's syncbench targets run everything at full scale (minutes;
// never part of make test) and syncbench-short at a small one; the
// commands and the figures are in ../../docs/BENCHMARKS.md.
package syncbench
