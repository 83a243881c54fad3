// Package work holds the three coordination primitives package rebuild
// builds its concurrency from, each with one job:
//
//   - Flight: work that many goroutines need done once (catching a filter
//     up on the log, building the stored spellings): one leads, the others
//     wait on a channel their context can abandon, and the leader's
//     outcome reaches them all.
//   - Life: the work in progress on an index or a database, so that Close
//     waits for it (its context bounding the wait), never for work parked
//     in a callback of the app, and runs what remains of closing once,
//     when the last work ends.
//   - Pending: a job asked of a background goroutine and not finished,
//     queued at most once however often it is asked, so that a caller can
//     wait until none is.
//
// None holds a lock while the work it coordinates runs.
package work
