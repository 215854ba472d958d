-- What the probe saw on each host × address, one row per change (issue 22): the outcome is
-- the observation without its times, as JSON; `at` is when it was first seen. Rows older
-- than the history retention go with the rest of the history.
CREATE TABLE probe_results (
    id INTEGER PRIMARY KEY,
    cluster TEXT NOT NULL,
    host TEXT NOT NULL,
    address TEXT NOT NULL,
    at TEXT NOT NULL,
    -- JSON list of the namespaces that publish the host (for scoped reads).
    namespaces TEXT NOT NULL,
    outcome TEXT NOT NULL
);
CREATE INDEX probe_results_key ON probe_results (cluster, host, address, at);
CREATE INDEX probe_results_at ON probe_results (at);
