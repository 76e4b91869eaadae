"""Why a store cannot answer for a link right now. Every one is safe to retry with the same request id."""

from __future__ import annotations


class Unavailable(Exception):
    """A store cannot be reached, or a link cannot be served until it is repaired (gRPC UNAVAILABLE)."""


class LinkLost(Unavailable):
    """Redis forgot the link, went back behind the ledger, or forked from it: it is rebuilt from the ledger."""


class LinkFenced(Unavailable):
    """The ledger refused one of the link's entries: the link alone is stopped until an operator acts."""


def lost(link_id: str) -> LinkLost:
    """The error for a link whose keys the live store no longer holds."""
    return LinkLost(f"link {link_id}: Redis has lost its state; it is being rebuilt from the ledger, "
                    "retry with the same request_id")
