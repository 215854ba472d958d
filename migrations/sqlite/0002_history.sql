-- 0002: the ACME history Kubernetes throws away. One row per object ever seen (keyed by the
-- cluster and the object's uid), its last known state kept after deletion, and one row per
-- change of state. The writer compares with the stored state before it inserts, so relists,
-- restarts and replayed watch events never add a row.

-- Every Challenge ever seen.
CREATE TABLE challenges (
    id             INTEGER PRIMARY KEY,
    cluster        TEXT NOT NULL,             -- configured cluster name
    namespace      TEXT NOT NULL,
    name           TEXT NOT NULL,
    uid            TEXT NOT NULL,             -- metadata.uid: a recreated object is a new row
    order_name     TEXT,                      -- the owning Order
    dns_name       TEXT NOT NULL,             -- spec.dnsName
    challenge_type TEXT NOT NULL,             -- HTTP-01 | DNS-01
    state          TEXT NOT NULL,             -- status.state as last seen ('' = unknown)
    reason         TEXT,                      -- status.reason as last seen
    presented      INTEGER NOT NULL,          -- status.presented (0/1)
    processing     INTEGER NOT NULL,          -- status.processing (0/1)
    created_at     TEXT,                      -- metadata.creationTimestamp
    last_seen      TEXT NOT NULL,             -- when the writer last got an event for it
    deleted_at     TEXT,                      -- when it disappeared; NULL while it exists
    UNIQUE (cluster, uid)
);
CREATE INDEX challenges_by_scope ON challenges (cluster, namespace, last_seen);
CREATE INDEX challenges_by_domain ON challenges (dns_name);

-- Each change of a Challenge's state, reason, presented or processing.
CREATE TABLE challenge_transitions (
    id           INTEGER PRIMARY KEY,
    challenge_id INTEGER NOT NULL REFERENCES challenges (id) ON DELETE CASCADE,
    at           TEXT NOT NULL,               -- when the change was observed, RFC 3339 UTC
    state        TEXT NOT NULL,
    reason       TEXT,
    presented    INTEGER NOT NULL,
    processing   INTEGER NOT NULL
);
CREATE INDEX challenge_transitions_by_challenge ON challenge_transitions (challenge_id, at);
CREATE INDEX challenge_transitions_by_time ON challenge_transitions (at);

-- Every ACME Order ever seen, and its state changes.
CREATE TABLE orders (
    id          INTEGER PRIMARY KEY,
    cluster     TEXT NOT NULL,
    namespace   TEXT NOT NULL,
    name        TEXT NOT NULL,
    uid         TEXT NOT NULL,
    request     TEXT,                         -- the owning CertificateRequest
    state       TEXT NOT NULL,                -- status.state ('' = unknown)
    reason      TEXT,                         -- status.reason (rate limits show here)
    created_at  TEXT,
    last_seen   TEXT NOT NULL,
    deleted_at  TEXT,
    UNIQUE (cluster, uid)
);
CREATE TABLE order_transitions (
    id        INTEGER PRIMARY KEY,
    order_id  INTEGER NOT NULL REFERENCES orders (id) ON DELETE CASCADE,
    at        TEXT NOT NULL,
    state     TEXT NOT NULL,
    reason    TEXT
);
CREATE INDEX order_transitions_by_order ON order_transitions (order_id, at);

-- Issuance attempts: one row per CertificateRequest.
CREATE TABLE certificate_requests (
    id           INTEGER PRIMARY KEY,
    cluster      TEXT NOT NULL,
    namespace    TEXT NOT NULL,
    name         TEXT NOT NULL,
    uid          TEXT NOT NULL,
    certificate  TEXT,                        -- the owning Certificate
    revision     INTEGER,                     -- cert-manager.io/certificate-revision
    issuer_kind  TEXT,
    issuer_name  TEXT,
    acme_server  TEXT,                        -- the issuer's ACME directory URL when first seen
    names        TEXT NOT NULL,               -- JSON array of the names in the CSR
    outcome      TEXT NOT NULL,               -- pending | issued | failed | denied
    reason       TEXT,                        -- Ready condition reason
    message      TEXT,                        -- Ready condition message
    created_at   TEXT,
    finished_at  TEXT,                        -- when it became issued/failed/denied
    last_seen    TEXT NOT NULL,
    deleted_at   TEXT,
    UNIQUE (cluster, uid)
);
CREATE INDEX certificate_requests_by_certificate ON certificate_requests (cluster, namespace, certificate, created_at);
CREATE INDEX certificate_requests_by_outcome ON certificate_requests (outcome, finished_at);

-- Changes of a Certificate's Ready condition.
CREATE TABLE certificate_readiness (
    id         INTEGER PRIMARY KEY,
    cluster    TEXT NOT NULL,
    namespace  TEXT NOT NULL,
    name       TEXT NOT NULL,
    at         TEXT NOT NULL,
    status     TEXT NOT NULL,                 -- True | False | Unknown | absent
    reason     TEXT,
    message    TEXT
);
CREATE INDEX certificate_readiness_by_certificate ON certificate_readiness (cluster, namespace, name, at);

-- Every preview and action taken through Lookout.
CREATE TABLE audit_log (
    id         INTEGER PRIMARY KEY,
    at         TEXT NOT NULL,
    actor      TEXT NOT NULL,                 -- who (user, token name, or "anonymous")
    action     TEXT NOT NULL,                 -- e.g. edit-in-place, undo-edit-in-place, renew
    cluster    TEXT NOT NULL,
    namespace  TEXT NOT NULL,
    kind       TEXT NOT NULL,
    name       TEXT NOT NULL,
    dry_run    INTEGER NOT NULL,              -- 1 for a preview
    diff       TEXT,                          -- what changed (or would change)
    outcome    TEXT NOT NULL,                 -- ok | conflict | refused | error
    error      TEXT
);
CREATE INDEX audit_log_by_time ON audit_log (at);
CREATE INDEX audit_log_by_object ON audit_log (cluster, namespace, name);
