package jobs

import "fmt"

// responsesChains is the schema of stored responses as chains (schema
// version 3 with PostgreSQL): a response links to the one it continues
// (prev) instead of carrying the conversation again, a deleted response
// that another continues is hidden until that one goes, size is the
// bytes of a row (for the per-key quota, computed for the rows stored
// before), and images are stored once per key, referred to by hash.
// The columns are added, so responses stored before stay readable.
const responsesChains = `
ALTER TABLE responses ADD COLUMN prev TEXT NOT NULL DEFAULT '';
ALTER TABLE responses ADD COLUMN hidden INTEGER NOT NULL DEFAULT 0;
ALTER TABLE responses ADD COLUMN size BIGINT NOT NULL DEFAULT 0;
UPDATE responses SET size = length(body) + length(request) + length(input) + length(context);
CREATE INDEX responses_prev ON responses(prev);
CREATE INDEX responses_owner ON responses(owner, id, size); -- the quota sums from the index alone
CREATE TABLE response_images (
	owner TEXT NOT NULL,
	hash  TEXT NOT NULL,
	mime  TEXT NOT NULL,
	data  %[1]s NOT NULL,
	size  BIGINT NOT NULL,
	PRIMARY KEY (owner, hash)
);
CREATE TABLE response_image_refs (
	response_id TEXT NOT NULL,
	owner       TEXT NOT NULL,
	hash        TEXT NOT NULL,
	PRIMARY KEY (response_id, hash)
);
CREATE INDEX response_image_refs_image ON response_image_refs(owner, hash);
`

// upgradeSQLite brings an SQLite database to the chains schema, in one
// transaction, once (the responses table has no prev column before).
func (s *Store) upgradeSQLite() error {
	var n int
	if err := s.db.QueryRow(`SELECT COUNT(*) FROM pragma_table_info('responses') WHERE name = 'prev'`).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	tx, err := s.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.Exec(fmt.Sprintf(responsesChains, "BLOB")); err != nil {
		return fmt.Errorf("upgrade the responses table: %w", err)
	}
	return tx.Commit()
}
