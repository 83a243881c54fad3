// Package rebuild keeps a syncfilter in front of SQLite tables and
// answers, exactly, "did I already fetch this record?".
//
// # Basics
//
// Open the database once, through the app's SQLite driver, and take the
// index of each collection from it:
//
//	db, err := rebuild.OpenDB(ctx, rebuild.DBConfig{Path: "app.db", DB: appDB})
//	msgs, err := db.Index(ctx, rebuild.Source{Table: "messages", Column: "id", Snapshot: "app.db.messages.id.sfb"})
//	missing, err := msgs.Missing(ctx, page) // missing[i]: page[i] is still to fetch
//	defer db.Close(ctx)
//
// The filter's "absent" is final: no SQLite lookup. Its "maybe" is always
// confirmed in SQLite, in the statement that also checks the filter is
// current, and never counted as fetched on its own. Ids are compared in
// Unicode NFC: a record stored under an NFD spelling is found by its NFC
// spelling and the other way round.
//
// # Storing records: nothing to do
//
// The app stores fetched records as it always did, on its own
// connections. Two triggers log every inserted or re-keyed id; before the
// next answer relies on the filter, the filter has taken every id
// committed before the call, by any connection or process.
//
// # While the filter is not ready
//
// OpenDB and Index return at once; loading the snapshot, catching up,
// re-attaching after a migration and rebuilding run in the background,
// and until the filter is current every call is answered from SQLite,
// exactly. The snapshot's load, the first scan of a table and a
// re-attach start once the next call is answered (or at Wait), so that
// they do not share the machine with it. Wait waits for the filter;
// Stats says what happens; the background's events go to
// DBConfig.Logger.
//
// # A guest in the app's database
//
// Everything is checked before the first write (a TEXT key column of
// BINARY collation, stored, indexed); what the library adds, it adds in
// one transaction, and a failure leaves the schema as it was. The journal
// mode, the app's transactions and its files are the app's. A snapshot is
// used only if the database holds a record of this very file. Only the
// app's SQLite is used (DBConfig.Driver or DBConfig.DB): two copies in one
// process corrupt the database.
//
// # Keys
//
// Keys are valid UTF-8 of at most 64 KiB, equal after NFC or, with
// Source.Compare, byte for byte. Missing (and Need, for pages of id and
// version) answers each position of a page on its own, answers invalid
// keys as not fetched, and returns an *InvalidKeysError naming them.
//
// # Suspending
//
// DB.Suspend stops the background and lets go of every connection (iOS
// ends a suspended app that holds a lock); calls are still answered.
// DB.Resume goes on.
//
// The rules the code keeps are in the Index doc; how it keeps them, its
// locks and goroutines, in docs/ARCHITECTURE.md.
package rebuild
