-- 0003 (PostgreSQL): indexes for "what changed recently".
CREATE INDEX certificate_readiness_by_time ON certificate_readiness (at);
CREATE INDEX cluster_sync_events_by_time ON cluster_sync_events (at);
CREATE INDEX challenges_by_deletion ON challenges (deleted_at) WHERE deleted_at IS NOT NULL;
