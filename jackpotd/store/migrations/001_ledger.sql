-- The durable ledger (ARCHITECTURE.md, The ledger): double entry, append-only, hash-chained per link.
CREATE TABLE links (
    link_id     text PRIMARY KEY,
    last_seq    bigint NOT NULL DEFAULT 0,          -- head of the link's chain
    last_hash   bytea NOT NULL DEFAULT '\x'::bytea,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE entries (
    link_id         text NOT NULL REFERENCES links,
    seq             bigint NOT NULL,
    kind            text NOT NULL,
    request_id      text NOT NULL,
    request_hash    text NOT NULL,
    created_at      timestamptz NOT NULL,
    entry           jsonb NOT NULL,
    reply           text NOT NULL,                  -- the exact stored answer, for idempotent retries forever
    prev_hash       bytea NOT NULL,
    hash            bytea NOT NULL,
    PRIMARY KEY (link_id, seq),
    UNIQUE (link_id, request_id)
);

CREATE TABLE postings (
    link_id           text NOT NULL,
    seq               bigint NOT NULL,
    idx               int NOT NULL,
    account           text NOT NULL,
    amount_uc         bigint NOT NULL,
    balance_after_uc  bigint NOT NULL,
    PRIMARY KEY (link_id, seq, idx),
    FOREIGN KEY (link_id, seq) REFERENCES entries
);
CREATE INDEX postings_account ON postings (link_id, account, seq);

CREATE TABLE link_configs (
    link_id   text NOT NULL REFERENCES links,
    version   bigint NOT NULL,
    config    jsonb NOT NULL,
    PRIMARY KEY (link_id, version)
);

CREATE TABLE hits (
    hit_id                    text PRIMARY KEY,
    link_id                   text NOT NULL,
    seq                       bigint NOT NULL,
    table_id                  text NOT NULL,
    round_id                  text NOT NULL,
    seat                      int NOT NULL,
    hand                      text NOT NULL,
    cards                     text[] NOT NULL,
    pool                      text NOT NULL,
    amount_cents              bigint NOT NULL,
    funded_by_operator_cents  bigint NOT NULL,
    pool_before_uc            bigint NOT NULL,
    rule                      text NOT NULL,
    status                    text NOT NULL,
    FOREIGN KEY (link_id, seq) REFERENCES entries
);

-- Projections kept in the same transaction as the entries; rebuildable from them.
CREATE TABLE account_balances (
    link_id     text NOT NULL REFERENCES links,
    account     text NOT NULL,
    balance_uc  bigint NOT NULL,
    PRIMARY KEY (link_id, account)
);

CREATE TABLE rounds (
    link_id   text NOT NULL REFERENCES links,
    table_id  text NOT NULL,
    round_id  text NOT NULL,
    state     text NOT NULL,
    rev       bigint NOT NULL,
    data      text NOT NULL,
    PRIMARY KEY (link_id, table_id, round_id)
);

CREATE TABLE tables (
    table_id  text PRIMARY KEY,
    link_id   text NOT NULL REFERENCES links
);

-- Append-only: a trigger refuses any change to ledger rows, whoever asks.
CREATE FUNCTION refuse_ledger_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the ledger is append-only: % on % refused', TG_OP, TG_TABLE_NAME
        USING ERRCODE = 'insufficient_privilege';
END $$;

CREATE TRIGGER entries_append_only BEFORE UPDATE OR DELETE ON entries
    FOR EACH ROW EXECUTE FUNCTION refuse_ledger_change();
CREATE TRIGGER entries_no_truncate BEFORE TRUNCATE ON entries
    FOR EACH STATEMENT EXECUTE FUNCTION refuse_ledger_change();
CREATE TRIGGER postings_append_only BEFORE UPDATE OR DELETE ON postings
    FOR EACH ROW EXECUTE FUNCTION refuse_ledger_change();
CREATE TRIGGER postings_no_truncate BEFORE TRUNCATE ON postings
    FOR EACH STATEMENT EXECUTE FUNCTION refuse_ledger_change();
CREATE TRIGGER link_configs_append_only BEFORE UPDATE OR DELETE ON link_configs
    FOR EACH ROW EXECUTE FUNCTION refuse_ledger_change();

-- The application's role may read and append to the ledger, never change it.
DO $$ BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'jackpotd_app') THEN
        CREATE ROLE jackpotd_app NOLOGIN;
    END IF;
END $$;
GRANT SELECT, INSERT ON entries, postings, link_configs, hits TO jackpotd_app;
GRANT SELECT, INSERT, UPDATE ON links, account_balances, rounds, tables TO jackpotd_app;
GRANT SELECT ON schema_migrations TO jackpotd_app;
