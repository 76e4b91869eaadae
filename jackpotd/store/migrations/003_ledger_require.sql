-- Lets one statement check its own preconditions and undo itself: the ledger writer appends a whole
-- batch in a single statement, and aborts it if a link's head is not where the writer expected.
CREATE FUNCTION ledger_require(ok boolean, message text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    IF NOT ok THEN
        RAISE EXCEPTION '%', message USING ERRCODE = 'serialization_failure';
    END IF;
    RETURN true;
END $$;
