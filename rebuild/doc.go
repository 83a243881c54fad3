// Package rebuild keeps a syncfilter in front of a SQLite table and
// answers, definitively, "did I already fetch this record?".
//
// # Basics
//
// Open an Index on the app's table (Config.Table, Config.Column: one row
// per fetched record, keyed by the record id) or on a table the library
// owns (leave both empty), then ask:
//
//	ix, err := rebuild.Open(ctx, rebuild.Config{Path: "app.db", Table: "records", Column: "id", Snapshot: "records.sfb"})
//	missing, err := ix.Missing(ctx, page) // the ids of a server page still to fetch
//	ok, err := ix.Fetched(ctx, id)
//
// The filter's "absent" is final: no SQLite lookup. Its "maybe" is always
// confirmed in SQLite (Missing confirms a page's maybes in one statement,
// the keys passed as one JSON array to json_each) and never counted as
// fetched on its own. Keys are compared in canonical
// form (package normalize): a record stored under an NFD spelling by
// another tool is found by an NFC query and the other way round, without
// rewriting the table; the few stored spellings that are not NFC are noted
// in a side table, syncfilter_alias_<n>, mapping canonical form to stored
// form, and a confirmation looks in both.
//
// # Storing records: nothing to do
//
// The app stores fetched records as it always did, on any connection: the
// triggers log every inserted id, and the next Fetched or Missing catches
// up on the log before it trusts a negative. The calls below hand keys to
// the filter before the transaction that stores them commits. They are an
// optional shortcut that buys nothing measurable, since the next call
// catches up from the log anyway (BenchmarkMarkBuys: pages of 100 records
// stored and asked about cost the same with and without mark):
//
//   - MarkFetched (library's own table) covers, then inserts and commits;
//   - Update runs the app's function in a transaction on the index's
//     connection; keys passed to its mark function are covered before the
//     commit. An error or a panic in the function rolls the transaction
//     back (a panic is re-raised). The function must not call the Index:
//     it holds the only write connection; such a call on its goroutine
//     returns ErrNestedCall at once;
//   - Cover covers keys the app is about to commit on its own connection.
//
// A crash between cover and commit leaves a key in the filter that is not
// in the table: it answers "maybe" and is confirmed absent. A crash after
// the commit loses nothing either: the filter in memory is gone, and the
// next Open loads the snapshot and catches up from the log (below).
//
// # Generation and catch-up
//
// Attaching a source installs two triggers that append every inserted or
// re-keyed id to a log table, syncfilter_log_<n>, whose increasing row id
// is the source's generation (compaction always keeps the newest entry,
// so numbers are never reused). The triggers fire for every
// connection and process, the library or not. A snapshot records the
// generation it covers and the dataset id of the source (a random id
// stored in syncfilter_sources when the source is first attached), so a
// snapshot of another database, another table, or a database deleted and
// created again is refused.
//
// Every Fetched and Missing call first checks the generation; if it moved,
// the filter catches up on the new log entries before any of its negatives
// is trusted. In WAL mode the check costs a few dozen nanoseconds while
// nothing commits: the wal-index header (the -shm file, shared by every
// connection of every process) says whether any transaction committed
// since the last exact read; only then does one small query run. Rows written by the cron job, a
// second app process or a SQL shell are therefore seen by the next call.
// A snapshot whose generation the log cannot reach (compacted past it) is
// refused and the filter is rebuilt.
//
// # The database vouches for its snapshots
//
// Every save (by Open, Rebuild, Save, Close or the cron job's
// BuildSnapshot) records the file's checksum, generation and m in
// syncfilter_snapshots in a transaction that commits before the file is
// renamed into place. A snapshot is loaded only if that record exists, so
// a database restored from a backup refuses the snapshot saved after the
// backup, and a forged file (checksums are public BLAKE3) is refused
// (ErrNotVouched). Before its payload is read, a snapshot must also be
// plausible for the source: at most PlausibleFactor times the bits a
// rebuild would size for the rows it holds (ErrImplausible), so a file
// cannot make the index allocate more than the database warrants.
// docs/FORMAT.md lists the checks in order.
//
// A rebuild's scan holds a lease (a row in syncfilter_scans, renewed
// while it runs, expiring after ten minutes if its process died): log
// compaction by any process keeps every entry the scan will catch up
// from.
//
// # Rebuild
//
// Rebuild enters bypass (every query goes to SQLite), scans the source in
// one read transaction (streaming: the scanning goroutine reads the keys
// through the column's index, thousands per statement as one JSON array,
// or row by row without an index; one builder goroutine hashes them and
// sets the new filter's bits), sizes the filter from the row count ×
// Config.Headroom (a count(*) run alongside the scan on another
// connection; the builder keeps digests until it is in), catches up on
// the log since the scan and on keys covered meanwhile, publishes the
// filter with one atomic pointer store,
// then saves the snapshot atomically. A failed or cancelled rebuild drops
// the half-built filter and the previous one answers again. The first
// Open of a source scans before returning; later Opens with an unusable
// snapshot serve from SQLite and rebuild in the background.
//
// # Keys
//
// Keys are valid UTF-8 of at most MaxKeyBytes (64 KiB). Fetched refuses
// another key with an error; Missing answers every valid key of a page
// and lists the invalid ones as missing, never as fetched, with an
// *InvalidKeysError naming their positions.
//
// # A guest in the app's database
//
// Open checks the source before its first write (see resolveSource): the
// table exists and is a table; the column exists; its declared type has
// TEXT affinity and its collation is BINARY, since any other comparison
// could confirm an id that was never stored (ErrInexactColumn, no
// opt-out); lookups use an index (ErrNotIndexed, or AllowUnindexed).
// Names resolve case-insensitively to the names SQLite stores. Then one
// transaction creates syncfilter_sources (shared), the source's log and
// alias tables and its two triggers; any failure rolls all of it back.
// Open also sets the WAL journal mode (persistent) and needs write
// access. Config.ReadOnly opens the database read-only and creates,
// writes and saves nothing. Detach removes everything a source added, in
// one transaction, leaving sqlite_master as it was before the first
// attach (the WAL journal mode stays).
//
// Snapshot saves never replace the database or its -wal, -shm or
// -journal file (under any path), nor, unless Config.ReplaceForeignFile is
// set, a file that is not a snapshot or another dataset's snapshot
// (ErrUnsafeTarget, checked at Open before any write and again before
// every save).
//
// # States
//
// What the index is doing is one value, changed only in state.go under the
// Index's owner mutex: serving(F), bypass, rebuilding (bypass while F' is
// built, covered keys queued for it) and closed. Queries read it without a
// lock; Stats reports it (Serving, Rebuilding).
//
// # Caveats
//
// A Bloom filter cannot forget: deleted records stay "maybe" and cost one
// lookup each, and every filter fills up. Stats reports items against
// capacity, the estimated false-positive rate and RebuildDue; rebuild then
// (in process, or with the `syncfilter rebuild` cron job and Reload). By
// default the index does it by itself: when the estimated rate passes
// FPR × RebuildFactor it rebuilds in the background, at most once per
// Config.AutoRebuildEvery (Config.NoAutoRebuild turns this off).
package rebuild
