-- 0004: the challenge history is paged by SQLite (LIMIT/OFFSET in the list's order), so its
-- default order, the most recently seen first, reads an index instead of sorting every row.
CREATE INDEX challenges_by_last_seen ON challenges (last_seen);
