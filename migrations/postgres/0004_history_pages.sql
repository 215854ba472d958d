-- 0004 (PostgreSQL): the challenge history's default order reads an index.
CREATE INDEX challenges_by_last_seen ON challenges (last_seen);
