-- 0005 (PostgreSQL): the database records a Challenge's transitions itself, in the statement
-- that inserts the Challenge or changes its state, as SQLite's triggers do. A transition is
-- stamped with the time the writer saw the change (last_seen, set by that same statement).
CREATE FUNCTION challenge_transition() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO challenge_transitions (challenge_id, at, state, reason, presented, processing)
    VALUES (NEW.id, NEW.last_seen, NEW.state, NEW.reason, NEW.presented, NEW.processing);
    RETURN NULL;
END
$$;

CREATE TRIGGER challenge_first_seen AFTER INSERT ON challenges
FOR EACH ROW EXECUTE FUNCTION challenge_transition();

CREATE TRIGGER challenge_changed AFTER UPDATE OF state, reason, presented, processing ON challenges
FOR EACH ROW
WHEN ((OLD.state, OLD.reason, OLD.presented, OLD.processing)
      IS DISTINCT FROM (NEW.state, NEW.reason, NEW.presented, NEW.processing))
EXECUTE FUNCTION challenge_transition();
