"""The chaos harness and its history checker (issue 23): faults injected Jepsen's way, and a check of what the
tables were told against the ledger and Redis. history.py is the one codec of the clients' log."""
