-- Issue 21: a console acts for a person (ARCHITECTURE.md, Security). The trail's actor and role stay the person's, so
-- ListAudit(actor=...) finds the person's acts whichever way they came; agent names the console ("console:floor-1"),
-- '' when the person called directly (every row before this migration).
ALTER TABLE admin_audit ADD COLUMN agent text NOT NULL DEFAULT '';
