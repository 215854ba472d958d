-- 0010: the previews and results of actions (what /actions/{id} shows), as JSON, so that
-- whichever replica answers — or the same one after a restart — shows them. Rows go with the
-- history retention.
CREATE TABLE action_records (
    id     TEXT PRIMARY KEY NOT NULL,
    actor  TEXT NOT NULL,
    at     TEXT NOT NULL,              -- when the action was asked for, RFC 3339 UTC
    record TEXT NOT NULL               -- the record as the API shows it to its actor
);
CREATE INDEX action_records_at ON action_records (at);
