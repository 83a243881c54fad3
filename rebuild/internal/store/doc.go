// Package store holds every SQL statement of the library: it owns the
// connections to one database file, the statements run on them, and the
// library's tables in it; it knows nothing of filters or snapshots.
//
// A DB opens one writer (every write of the library), a few read-only
// readers kept with their prepared statements and handed out most recently
// used first (pool.mu guards the idle list), connections beside them for a
// scan, its count, one ScanSpellings (the spellScan token) and
// DataVersion's poll (the dv token), and, if the app hands over its
// *sql.DB, statements prepared on it (appRunner.mu guards them). Reads are
// short autocommit statements, never a long transaction, and work in every
// journal mode, which is the app's choice.
//
// The library's tables: syncfilter_sources (a row per source: dataset id,
// log floor, epoch, scan and spellings marks, last snapshot, the key of
// the positions and the lowest snapshot version accepted),
// syncfilter_log_<n> (keys inserted or re-keyed, in commit order, each
// with a random tag), syncfilter_spellings_<n> (stored non-NFC spellings
// by NFC form), syncfilter_snapshots (snapshot files saved),
// syncfilter_scans (leases of scans in progress) and syncfilter_fetched
// (the library's own table), with two triggers per source on the app's
// table. Attach creates them in one transaction; Detach removes them in one.
package store
