// Package store is the SQLite half of package rebuild: every statement the
// library runs, on the connections it opens and owns. It knows SQL,
// SQLite's rules and the library's tables; it knows nothing of filters,
// snapshots or the index's states, which package rebuild owns. The
// compiler keeps the split honest: rebuild cannot build a statement.
//
// # Connections
//
// A DB is one database file, opened once under one resolved name (Path):
//
//   - one writer (a database/sql pool of one connection): every write the
//     library makes — attaching a source, snapshot records, scan leases,
//     the spellings table, log compaction — and nothing else;
//   - a few readers (Options.Readers), handed out one at a time, most
//     recently used first so that a connection's page cache stays warm;
//     each keeps its prepared statements;
//   - beside the readers, so that they never wait for one (ownConns): a
//     rebuild's scan and the count beside it, a scan for stored
//     spellings, and one that reads PRAGMA data_version (the follower's
//     poll, and calls on sources without a log);
//   - the app's own pool, when the app hands it over (Options.App): the
//     statements that confirm a page's keys run on it when it has a
//     connection free (apppool.go).
//
// A call reads what it needs in one statement, one snapshot of the
// database (probe.go): the schema cookie, the source's log head, the
// first chunk of the log after the caller's generation, and the keys to
// confirm.
//
// The database's journal mode is the app's: no connection sets it, and
// every statement here works in DELETE, TRUNCATE, PERSIST and WAL mode.
// Reads are short statements in autocommit, never a long transaction, so
// that in a rollback-journal mode the app's writers wait at most one
// statement for them.
//
// # The library's tables
//
//	syncfilter_sources        one row per source: names, dataset id, log
//	                          floor, epoch, how far the spellings table is
//	                          complete, the last snapshot, the table's row
//	syncfilter_log_<n>        keys inserted or re-keyed, in commit order,
//	                          each with a random tag
//	syncfilter_spellings_<n>  stored spellings that are not NFC, by NFC form
//	syncfilter_snapshots      records of the snapshot files saved
//	syncfilter_scans          leases of the scans in progress (Detach
//	                          refuses while one is live)
//	syncfilter_fetched        the library's own table, when it owns one
//
// and two triggers per source on the app's table. Attach creates them in
// one transaction; Detach removes them in one.
package store
