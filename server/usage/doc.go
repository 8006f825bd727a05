// Package usage keeps per-API-key usage counters in memory: requests,
// requests refused by a rate limit, and tokens in (prompt) and out
// (generated). The auth middleware puts a key's counters in each
// request's context and the generation path adds the tokens it
// processes to whatever counters the context carries; Table.Snapshot is
// what an exporter (metrics) reads. Replicas that share a database pool
// their counts through a Sink (Table.Share, Table.Flush): Snapshot then
// answers every replica's totals. It must not know about HTTP, keys'
// secrets or the engine: a key is only an opaque id here.
package usage
