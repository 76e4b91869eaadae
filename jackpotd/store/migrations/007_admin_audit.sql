-- The trail of administrative acts (issue 10, part 4; API.md, ListAudit): one row per AdminService call,
-- refused ones included, carrying the authenticated actor. Append-only like the ledger: the trigger of
-- 001_ledger.sql refuses UPDATE, DELETE and TRUNCATE whoever asks, and the service's role may only insert and read.
CREATE TABLE admin_audit (
    id            bigserial PRIMARY KEY,
    at            timestamptz NOT NULL DEFAULT now(),
    actor         text NOT NULL,            -- the authenticated caller; '' when there was none
    role          text NOT NULL,
    method        text NOT NULL,            -- e.g. FundPool
    request_id    text NOT NULL,
    link_id       text NOT NULL,
    table_id      text NOT NULL,
    reason        text NOT NULL,
    approval_ref  text NOT NULL,
    outcome       text NOT NULL,            -- OK or the status code's name
    detail        text NOT NULL             -- the status message, truncated
);
CREATE INDEX admin_audit_link ON admin_audit (link_id, at);
CREATE INDEX admin_audit_at ON admin_audit (at);

CREATE TRIGGER admin_audit_append_only BEFORE UPDATE OR DELETE ON admin_audit
    FOR EACH ROW EXECUTE FUNCTION refuse_ledger_change();
CREATE TRIGGER admin_audit_no_truncate BEFORE TRUNCATE ON admin_audit
    FOR EACH STATEMENT EXECUTE FUNCTION refuse_ledger_change();

REVOKE ALL ON admin_audit FROM jackpotd_app;
GRANT SELECT, INSERT ON admin_audit TO jackpotd_app;
GRANT USAGE ON SEQUENCE admin_audit_id_seq TO jackpotd_app;
