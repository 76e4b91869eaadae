-- Issue 19: the credentials revoked before they expire (`jackpotd revoke`): a token by its id (jti), a certificate
-- by its serial number. Every worker reads new rows within a second or two and ends open streams of a revoked
-- credential. Append-only like the ledger: a revocation is never taken back (issue a new credential instead).
CREATE TABLE revoked_credentials (
    id          bigserial PRIMARY KEY,
    credential  text NOT NULL UNIQUE,       -- "jti:<id>" or "serial:<hex>"
    holder      text NOT NULL,              -- whose it was, when known (role:name)
    reason      text NOT NULL,
    revoked_by  text NOT NULL,              -- who revoked it (the host's account)
    revoked_at  timestamptz NOT NULL DEFAULT now(),
    CHECK (credential ~ '^(jti|serial):[0-9A-Za-z._-]{1,128}$')
);

CREATE TRIGGER revoked_credentials_append_only BEFORE UPDATE OR DELETE ON revoked_credentials
    FOR EACH ROW EXECUTE FUNCTION refuse_ledger_change();
CREATE TRIGGER revoked_credentials_no_truncate BEFORE TRUNCATE ON revoked_credentials
    FOR EACH STATEMENT EXECUTE FUNCTION refuse_ledger_change();

REVOKE ALL ON revoked_credentials FROM jackpotd_app;
GRANT SELECT, INSERT ON revoked_credentials TO jackpotd_app;
GRANT USAGE ON SEQUENCE revoked_credentials_id_seq TO jackpotd_app;
