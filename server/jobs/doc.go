// Package jobs is Tadpole's durable job queue and response store: jobs
// (a type, the request's body, an owner, a model) are written to a
// database before they are acknowledged, run by a fixed number of
// workers oldest first, and their results or errors are kept until a
// retention period has passed. Stored responses of the Responses API
// live beside them.
//
// Two databases, one Store (Config.URL):
//
//   - SQLite (the default, modernc.org/sqlite, pure Go; WAL, synchronous
//     writes), a file in the data directory, for one server. An
//     exclusive lock on the directory keeps a second process out, and
//     opening the store puts the jobs a crash left running back in the
//     queue (a job interrupted too often fails instead).
//   - PostgreSQL (pgx), shared by replicas. The schema is versioned
//     (schema_migrations; a database migrated by a newer Tadpole is
//     refused before anything is written). A replica claims the oldest
//     job of a model it serves with SELECT … FOR UPDATE SKIP LOCKED and
//     holds it by a lease it renews every third of Config.Lease; a job
//     whose lease ran out (its replica died) is claimed by another.
//     LISTEN/NOTIFY wakes idle workers when a job is queued and stops a
//     cancelled job's run wherever it runs. Per-key usage counts are
//     pooled there too (ShareUsage).
//
// A job accepted is never lost and its outcome is written once: a claim
// carries a token (the attempt number with SQLite, a random lease token
// with PostgreSQL), and the outcome is written by one conditional UPDATE
// that checks the token, so a run whose job was cancelled or reclaimed
// meanwhile cannot overwrite it. A job may run more than once (its
// server died mid-run); it completes once.
//
// While PostgreSQL cannot be reached, calls fail with ErrUnavailable
// (the HTTP layer answers 503 with Retry-After), workers keep trying and
// a run's outcome waits until the database is back.
//
// Limits: a run past Config.Deadline is stopped and the job fails with
// "deadline exceeded"; an owner with Config.MaxQueuedPerOwner jobs queued
// gets ErrQuota from Submit. Drain stops claiming and hands the runs
// still going at its deadline back to the queue (a rolling update).
//
// The package knows nothing of what a job does or of HTTP: the caller
// gives the workers a function that runs one job and returns its result.
package jobs
