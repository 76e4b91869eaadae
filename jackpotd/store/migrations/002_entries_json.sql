-- Entries keep the exact text the service wrote: `json` stores it as is (jsonb would re-encode it),
-- which is cheaper to write and is what the hash chain covers.
ALTER TABLE entries ALTER COLUMN entry TYPE json USING entry::json;
