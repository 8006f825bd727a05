package jobs

import (
	"database/sql"
	"log/slog"
	"time"
)

// A job that was running when its server died may be what killed it (a
// request that exhausts memory kills the process again at each restart).
// The attempt counter, written with the claim before the job runs, tells:
// a clean stop hands a running job back without counting its attempt, so
// a claimed job whose attempt count is above 1 has seen its server die
// (suspect in worker.go: it runs alone), and one claimed MaxAttempts
// times whose server died again fails with diedMessage instead of
// running once more. SQLite finds these jobs when the store opens
// (recoverDied), PostgreSQL when their lease runs out (pgBackend.claim).

// diedMessage is the SQL expression of a job's error after its server
// died attempts times while running it.
const diedMessage = `'the server died ' || CASE WHEN attempts = 2 THEN 'twice' WHEN attempts = 1 THEN 'once' ELSE attempts || ' times' END
	|| ' while running this job; it is not run again, as it may be what kills the server'`

// recoverDied deals with the jobs an SQLite store's previous process
// left running, which were running when it died: each is queued again,
// suspect (its attempt stays counted), or fails once the server has died
// MaxAttempts times while running it.
func (s *Store) recoverDied() error {
	failed, err := s.db.Query(`UPDATE jobs SET state = 'failed', finished_at = ?, error = `+diedMessage+`
		WHERE state = 'running' AND attempts >= ? RETURNING id, type, attempts`, time.Now().UnixNano(), s.cfg.MaxAttempts)
	if err != nil {
		return err
	}
	if err := logDied(failed, "a job failed: the server died each time it ran it"); err != nil {
		return err
	}
	again, err := s.db.Query(`UPDATE jobs SET state = 'queued', started_at = 0 WHERE state = 'running' RETURNING id, type, attempts`)
	if err != nil {
		return err
	}
	return logDied(again, "a job was running when the server died: queued again, to run alone")
}

// logDied logs each job the rows name (id, type, attempts).
func logDied(rows *sql.Rows, msg string) error {
	defer rows.Close()
	for rows.Next() {
		var id, typ string
		var attempts int
		if err := rows.Scan(&id, &typ, &attempts); err != nil {
			return err
		}
		slog.Error(msg, "id", id, "type", typ, "deaths", attempts)
	}
	return rows.Err()
}
