-- 0005: SQLite records a Challenge's transitions itself, in the statement that inserts the
-- Challenge or changes its state, so the history writer sends one statement per event
-- instead of two. A transition is stamped with the time the writer saw the change
-- (last_seen, set by that same statement).
CREATE TRIGGER challenge_first_seen AFTER INSERT ON challenges
BEGIN
    INSERT INTO challenge_transitions (challenge_id, at, state, reason, presented, processing)
    VALUES (NEW.id, NEW.last_seen, NEW.state, NEW.reason, NEW.presented, NEW.processing);
END;

CREATE TRIGGER challenge_changed AFTER UPDATE OF state, reason, presented, processing ON challenges
WHEN (OLD.state, OLD.reason, OLD.presented, OLD.processing)
    IS NOT (NEW.state, NEW.reason, NEW.presented, NEW.processing)
BEGIN
    INSERT INTO challenge_transitions (challenge_id, at, state, reason, presented, processing)
    VALUES (NEW.id, NEW.last_seen, NEW.state, NEW.reason, NEW.presented, NEW.processing);
END;
