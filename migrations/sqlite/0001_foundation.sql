-- 0001: the first schema. History tables (challenges, orders, certificate requests, audit)
-- follow in later migrations; this one records what the foundation itself produces.

-- Every change of a cluster's sync state, so "what changed recently" survives restarts and a
-- flapping cluster can be seen after the fact.
CREATE TABLE cluster_sync_events (
    id      INTEGER PRIMARY KEY,
    cluster TEXT NOT NULL,              -- the configured cluster name (config `clusters[].name`)
    state   TEXT NOT NULL               -- connecting | synced | stale | failed
            CHECK (state IN ('connecting', 'synced', 'stale', 'failed')),
    error   TEXT,                       -- the error behind stale/failed; NULL otherwise
    at      TEXT NOT NULL               -- when the state changed, RFC 3339 UTC
);

-- The clusters page reads the latest rows of one cluster.
CREATE INDEX cluster_sync_events_by_cluster_time ON cluster_sync_events (cluster, at);
