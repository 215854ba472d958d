-- 0007 (PostgreSQL): sign-ins ended by signing out, kept until they would have expired.
CREATE TABLE ended_sessions (
    id TEXT PRIMARY KEY NOT NULL,
    -- Unix seconds: when the session would have expired.
    expires BIGINT NOT NULL
);
