// Package jobs is Tadpole's durable job queue: jobs (a type, the
// request's body, an owner) are written to an embedded SQLite database
// (modernc.org/sqlite, pure Go; WAL, synchronous writes) before they are
// acknowledged, run by a fixed number of workers oldest first, and their
// results or errors are kept until a retention period has passed.
//
// A job accepted is never lost and its result is written once: a worker
// claims a job and records its outcome each in one conditional UPDATE, so
// a crash between the two leaves the job "running", and opening the
// store puts such jobs back in the queue to run again (a job interrupted
// too often fails instead). An exclusive lock on the data directory keeps
// a second process from running the same jobs.
//
// Limits: a run past Config.Deadline is stopped and the job fails with
// "deadline exceeded"; an owner with Config.MaxQueuedPerOwner jobs queued
// gets ErrQuota from Submit.
//
// The package knows nothing of what a job does or of HTTP: the caller
// gives the workers a function that runs one job and returns its result.
package jobs
