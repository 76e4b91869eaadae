"""Who is calling and what they may do (ARCHITECTURE.md, Security): identities from client certificates and
bearer tokens, the roles, and the one table of which role may call which method."""
