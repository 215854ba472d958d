-- 0006: whether an Order replaces a certificate by ARI (spec.replaces, RFC 9773): such an
-- order is exempt from Let's Encrypt's new-order limits, so the budgets must know.
ALTER TABLE orders ADD COLUMN replaces INTEGER NOT NULL DEFAULT 0;
