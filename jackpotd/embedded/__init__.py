"""Embedded PostgreSQL and Valkey from pip-installed binaries, for `make run`, tests and CI.

Both run as children that die with their parent (PR_SET_PDEATHSIG), keep their data under a state
directory and listen on loopback only. PostgreSQL refuses to run as root, so as root it runs as a
system account of its own (`account`: jackpotd-pg, made once by `jackpotd system-account`), and nothing
outside the state directory changes permission. That account may be unable to traverse the checkout's
ancestors (a clone in root's 0700 home, or in `mktemp -d`), so it runs a copy of the binaries it can reach
(`install`) on a data directory handed to it as a descriptor (`postgres`).
Without root nothing is copied and the paths are used as they are. Starting and stopping the children
is `process`; `valkey` is the Valkey server.
"""

from .postgres import EmbeddedPostgres
from .process import free_port
from .valkey import EmbeddedValkey, EmbeddedValkeyCluster

__all__ = ["EmbeddedPostgres", "EmbeddedValkey", "EmbeddedValkeyCluster", "free_port"]
