-- 0009: the resourceVersion of the object a stored state was seen in (NULL when unknown or
-- not a number). Several Lookout replicas may share one database, each writing what it saw:
-- one that writes a change late must not record an older state again after a newer one.
ALTER TABLE challenges ADD COLUMN resource_version INTEGER;
ALTER TABLE orders ADD COLUMN resource_version INTEGER;
ALTER TABLE certificate_requests ADD COLUMN resource_version INTEGER;
ALTER TABLE certificate_readiness ADD COLUMN resource_version INTEGER;
