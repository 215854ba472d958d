-- Sign-ins ended by signing out (auth.mode = "oidc"), kept until they would have expired
-- anyway, so that a copied session cookie stays refused after a restart.
CREATE TABLE ended_sessions (
    id TEXT PRIMARY KEY NOT NULL,
    -- Unix seconds: when the session would have expired.
    expires INTEGER NOT NULL
);
