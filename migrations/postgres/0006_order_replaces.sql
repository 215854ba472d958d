-- 0006 (PostgreSQL): whether an Order replaces a certificate by ARI (spec.replaces).
ALTER TABLE orders ADD COLUMN replaces BIGINT NOT NULL DEFAULT 0;
