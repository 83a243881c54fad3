// Package rebuild keeps a syncfilter in front of SQLite tables and
// answers, definitively, "did I already fetch this record?".
//
// # Basics
//
// Open the database once, through the app's SQLite driver, and take the
// index of each collection from it:
//
//	db, err := rebuild.OpenDB(ctx, rebuild.DBConfig{Path: "app.db", DB: appDB})
//	msgs, err := db.Index(ctx, rebuild.Source{Table: "messages", Column: "id", Snapshot: "messages.sfb"})
//	missing, err := msgs.Missing(ctx, page) // missing[i]: page[i] is still to fetch
//	ok, err := msgs.Fetched(ctx, id)
//	defer db.Close(ctx)
//
// or, for one collection, rebuild.Open(ctx, dbConfig, source). Both return
// without loading the snapshot: until the filter is loaded and current,
// every call is answered exactly from SQLite (Index.Wait waits for it).
// The library reaches the database only through the app's SQLite copy
// (DBConfig.Driver or DBConfig.DB): two copies in one process corrupt it.
// The filter's "absent" is final: no SQLite lookup. Its "maybe" is always confirmed in
// SQLite (Missing confirms a page's maybes in one statement) and never
// counted as fetched on its own. Keys are compared in canonical form
// (package normalize): a record stored under an NFD spelling by another
// tool is found by an NFC query and the other way round, without
// rewriting the table.
//
// # Storing records: nothing to do
//
// The app stores fetched records as it always did, on its own connection
// and in its own transactions: two triggers log every inserted or
// re-keyed id, and the next Fetched or Missing catches up on the log
// before it trusts a negative. (MarkFetched stores ids in a table the
// library owns, for apps without one.)
//
// # Freshness, generation and catch-up
//
// Before every answer the index checks what changed (file.go, probe.go):
// the file at the path (one stat: a database deleted and created again is
// opened anew, never answered from the old file), then, in the one
// statement that also confirms the filter's maybes (the probe), the
// schema cookie (the app's migration) and the log's head. The log's
// increasing sequence is the source's generation, and the filter takes
// every key logged up to the head before the call trusts it. After a change of schema it checks the source again:
// a table rebuilt by a migration, dropped and created again or renamed
// has lost the triggers (or taken them along): the index answers from
// SQLite, attaches the source again in one transaction (a new epoch, so
// every filter and snapshot of the old one, in every process, is
// dropped) and rebuilds. Rows written by the cron job, a second app
// process or a SQL shell are therefore seen by the next call. A call whose
// keys the filter rules out all of skips the probe when nothing committed
// since the last probe on its connection: PRAGMA data_version on that
// connection, which never writes, changes with any commit of any
// connection or process (the library's own writer included).
//
// The few stored spellings that are not NFC are noted in a side table,
// syncfilter_spellings_<n>, complete up to a generation the database
// records; beyond it every index keeps the spellings it read from the log
// in memory (spellings.go). A confirmation of a key that may have another
// spelling looks in both.
//
// # The database vouches for its snapshots
//
// Every save (by a rebuild, Save, Close or the cron job's BuildSnapshot)
// records the file's checksum, generation and m in syncfilter_snapshots in
// a transaction that commits before the file is renamed into place. A
// snapshot is loaded only if that record exists, so a database restored
// from a backup refuses the snapshot saved after the backup, and a forged
// file (checksums are public BLAKE3) is refused (ErrNotVouched). Before its
// payload is read, a snapshot must also be plausible for the database (at
// most PlausibleFactor times the bits its size warrants: ErrImplausible),
// so a file cannot make the index allocate more than the database
// warrants; nothing on the way to the first answer reads every row.
// docs/FORMAT.md lists the checks in order. A snapshot that cannot be used
// is not an error: the index serves from SQLite and rebuilds
// (Stats.SnapshotError says why); a snapshot path that holds a file the
// library did not write is never replaced (ErrUnsafeTarget, reported the
// same way).
//
// # Rebuild
//
// Rebuild puts the collection in bypass (every query about it goes to
// SQLite), scans the source in short chunks read through the column's
// index (no read transaction spans the scan, so the app's writers never
// wait long for it in any journal mode), builds the new filter on a
// builder goroutine, sized from the row count alongside, publishes it
// with one atomic pointer store, then records the scan and saves the
// snapshot atomically. A failed or cancelled rebuild drops the half-built
// filter and the previous one answers again. The rebuilds of a database's
// collections take turns, on the database's worker goroutine when the
// index asks for them itself (Source.AutoRebuild): when its snapshot could
// not be used, its filter was dropped, or its estimated false-positive
// rate passed FPR × AutoRebuild.Factor (at most a tenth of the time, by
// the rebuilds' own cost; sized for fast growth when the source grew
// fast). A scan's lease
// (syncfilter_scans) keeps every process's log compaction from deleting
// the entries it will catch up from.
//
// # Keys
//
// Keys are valid UTF-8 of at most MaxKeyBytes (64 KiB). Fetched refuses
// another key with an error. Missing answers each position of a page on
// its own (an id the page repeats, or names in two spellings, gets the
// same answer at each position), answers the invalid keys missing, never
// fetched, and returns an *InvalidKeysError naming their positions:
// handle it as a partial result, not as a failure of the page (see the
// example).
//
// # A guest in the app's database
//
// An index checks the source before its first write: the table exists
// and is a table; the column exists and is not generated; its declared
// type has TEXT affinity and its collation is BINARY, since any other
// comparison could confirm an id that was never stored (ErrInexactColumn,
// no opt-out); lookups use an index (ErrNotIndexed, or AllowUnindexed).
// Names resolve case-insensitively to the names SQLite stores. Then one
// transaction creates the library's tables, the source's log and
// spellings tables and its two triggers; any failure rolls all of it back, and a
// first attach whose scan fails (or is interrupted) is removed again. The
// journal mode is the app's and is never changed. A read-only database
// (DBConfig.ReadOnly) creates, writes and saves nothing. Detach removes
// everything a source added, in one transaction, leaving sqlite_master as
// it was before the first attach; it refuses only while a rebuild's scan
// (in any process) holds a lease on the source (ErrHeld).
//
// # Concurrency
//
// Every method is safe for concurrent use. No lock a call can wait for is
// held across SQL or a callback; work that many calls need (catching the
// filter up) is led by one of them while the others wait on a channel
// their ctx can abandon. The index's states — serving(F), bypass,
// rebuilding, closed — change in one place (state.go) under one owner
// mutex. The Index type lists the rules the code keeps;
// docs/ARCHITECTURE.md ("Locks and goroutines") every lock, turn and
// goroutine, and the one order locks are taken in.
//
// # Suspending
//
// DB.Suspend stops the background work and lets go of every connection
// (iOS ends a suspended app that holds a lock on an SQLite file of a
// shared container); calls made meanwhile are still answered exactly.
// DB.Resume goes on where the work was interrupted.
//
// # Caveats
//
// A Bloom filter cannot forget: deleted records stay "maybe" and cost one
// lookup each, and every filter fills up. Stats reports items against
// capacity, the estimated and the measured false-positive rates and
// RebuildDue. A rebuild's scan reads every row: O(rows), in the
// background. So does, in a call about a key that may have another
// spelling, the scan for stored spellings of a source whose log cannot
// vouch for them: one never attached and opened read-only (again after
// every commit), or one attached again after a migration (once, until its
// rebuild completes).
//
// What the library cannot see: a DROP TRIGGER of one of its triggers, then
// writes, then a CREATE TRIGGER of the very same text on the same table
// leaves no trace (the schema looks as before), and rows written in
// between are not in the log: don't touch the syncfilter_ triggers (Detach
// the source, migrate, and let the next open attach it again). Writes
// through a second name of the database file (a hard link) are refused
// (ErrHardLinked) but may leave SQLite's other connections with a stale
// view of a WAL until they close. A process killed outright (kill -9)
// during its first attach leaves the library's tables and a lease that
// expires after ten minutes: Detach with Force removes them at once.
//
// A backup restored into the database in place (SQLite's backup API, or
// `.restore`) brings back an older log, which the app may write on under
// sequence numbers the filter already read. Every log entry carries a
// random tag, and every probe reads the tag of the entry at the filter's
// mark: an entry that is not the one the filter read marks the filter
// suspect, calls answer from SQLite, and the worker has the filter take
// again every key the log retains up to its mark; the filter is dropped
// instead when the log's head is behind it, when another dataset's
// content was restored, or when the log was compacted since the filter
// read it (the entries the restore let the app write under old numbers
// may be gone). A database file renamed over the open one is a new file
// at the path (the file check above); copying bytes over an open
// database is not a restore SQLite supports.
package rebuild
