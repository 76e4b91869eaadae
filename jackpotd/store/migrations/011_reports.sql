-- Finance (issue 12; RULES.md §10; README, Finance). The ledger writer keeps, in the same statement that
-- appends the entries, each link's movements summed per quarter hour (UTC) and per account, flow and detail
-- (jackpotd/domain/flows.py says what each flow is). A day's reconciliation reads ~96 quarter hours of
-- summaries instead of the day's entries. Projections, like account_balances: `jackpotd audit` and
-- VerifyLedger re-derive them from the entries and name any difference.
CREATE TABLE flow_buckets (
    link_id    text NOT NULL REFERENCES links,
    bucket     timestamptz NOT NULL,    -- the quarter hour's start (UTC)
    first_seq  bigint NOT NULL,         -- the link's entries in it (created_at is never before the last one's)
    last_seq   bigint NOT NULL,
    entries    bigint NOT NULL,
    PRIMARY KEY (link_id, bucket)
);

CREATE TABLE flow_totals (
    link_id    text NOT NULL REFERENCES links,
    bucket     timestamptz NOT NULL,
    account    text NOT NULL,           -- pool:MAJOR, wagers, operator_funding, ...
    flow       text NOT NULL,           -- contribution, overflow_out, refund, funding, payout, ...
    detail     text NOT NULL,           -- a payout's hand; a funding's source (top-up, shortfall, reset, ...)
    amount_uc  bigint NOT NULL,
    items      bigint NOT NULL,         -- wagers, refunds or hits counted
    PRIMARY KEY (link_id, bucket, account, flow, detail)
);
ALTER TABLE flow_buckets SET (autovacuum_vacuum_scale_factor = 0.05);
ALTER TABLE flow_totals SET (autovacuum_vacuum_scale_factor = 0.05);

REVOKE ALL ON flow_buckets, flow_totals FROM jackpotd_app;
GRANT SELECT, INSERT ON flow_buckets, flow_totals TO jackpotd_app;
GRANT UPDATE (first_seq, last_seq, entries) ON flow_buckets TO jackpotd_app;
GRANT UPDATE (amount_uc, items) ON flow_totals TO jackpotd_app;

-- ---- Views for BI tools (README, Finance). Gaming days use each link's current time zone and gaming-day
-- start (RULES.md §10), to the quarter hour: exact for a start on a quarter hour (06:00, 06:15, ...);
-- GetReconciliation is exact for any start and any period.
CREATE VIEW report_link_days AS
SELECT DISTINCT ON (c.link_id) c.link_id, (c.config::jsonb ->> 'time_zone') AS time_zone,
       (c.config::jsonb ->> 'gaming_day_start')::interval AS day_start
FROM link_configs c ORDER BY c.link_id, c.version DESC;

-- Each pool's movements per gaming day, in µ¢ (positive in the direction the column names).
CREATE VIEW report_pool_movements_daily AS
SELECT t.link_id,
       ((t.bucket AT TIME ZONE d.time_zone) - d.day_start)::date AS gaming_day,
       substr(t.account, 6) AS pool,
       sum(t.amount_uc) FILTER (WHERE t.flow = 'contribution')::bigint AS contributions_uc,
       -sum(t.amount_uc) FILTER (WHERE t.flow = 'overflow_out')::bigint AS overflow_out_uc,
       sum(t.amount_uc) FILTER (WHERE t.flow = 'overflow_in')::bigint AS overflow_in_uc,
       -sum(t.amount_uc) FILTER (WHERE t.flow = 'refund')::bigint AS refunds_uc,
       sum(t.amount_uc) FILTER (WHERE t.flow = 'funding')::bigint AS funding_uc,
       sum(t.amount_uc) FILTER (WHERE t.flow = 'transfer_in')::bigint AS transfers_in_uc,
       -sum(t.amount_uc) FILTER (WHERE t.flow = 'transfer_out')::bigint AS transfers_out_uc,
       -sum(t.amount_uc) FILTER (WHERE t.flow IN ('payout', 'rejected'))::bigint AS payouts_uc,
       sum(t.items) FILTER (WHERE t.flow = 'payout')::bigint AS hits,
       sum(t.amount_uc)::bigint AS net_uc
FROM flow_totals t JOIN report_link_days d USING (link_id)
WHERE t.account LIKE 'pool:%'
GROUP BY 1, 2, 3;

-- Every hit with what traces it (RULES.md §10): round, seat, cards, the pool before, the rule, its status now.
CREATE VIEW report_hits AS
SELECT h.link_id, h.hit_id, h.seq, e.created_at,
       ((e.created_at AT TIME ZONE d.time_zone) - d.day_start)::date AS gaming_day,
       h.table_id, h.round_id, h.seat, h.hand, h.cards, h.pool, h.amount_cents, h.funded_by_operator_cents,
       h.pool_before_uc, h.rule, coalesce(x.status, h.status) AS status
FROM hits h
JOIN entries e ON e.link_id = h.link_id AND e.seq = h.seq
JOIN report_link_days d ON d.link_id = h.link_id
LEFT JOIN hit_decisions x ON x.link_id = h.link_id AND x.table_id = h.table_id AND x.round_id = h.round_id
                         AND x.seat = h.seat;

-- Operator funding per gaming day and source (top-up, shortfall, reset, void shortfall, rejected: given back), in µ¢.
CREATE VIEW report_operator_funding_daily AS
SELECT t.link_id,
       ((t.bucket AT TIME ZONE d.time_zone) - d.day_start)::date AS gaming_day,
       CASE WHEN t.flow = 'rejected' THEN 'rejected hit returned' ELSE t.detail END AS source,
       -sum(t.amount_uc)::bigint AS funded_uc
FROM flow_totals t JOIN report_link_days d USING (link_id)
WHERE t.account = 'operator_funding'
GROUP BY 1, 2, 3;

-- A role for BI tools: the views only (GRANT jackpotd_report TO your_bi_login).
DO $$ BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'jackpotd_report') THEN
        CREATE ROLE jackpotd_report NOLOGIN;
    END IF;
END $$;
GRANT SELECT ON report_link_days, report_pool_movements_daily, report_hits, report_operator_funding_daily
    TO jackpotd_report, jackpotd_app;
