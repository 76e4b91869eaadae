"""What this process knows of links: their configs and tables (cached), and checked reads of their state.
Nothing is answered from a live store the ledger does not back: a link or table the live store forgot
is LinkLost (UNAVAILABLE while it is rebuilt), never NOT_FOUND."""

from __future__ import annotations

from ..domain.errors import NotFound
from ..domain.ids import require_id
from ..domain.link import LinkConfig
from .errors import LinkLost, lost
from .ports import Durability, Ledger, LinkRead, LiveStore


class Links:
    """Link configs and table→link, cached per process; reads refused when the live store went wrong."""

    def __init__(self, live: LiveStore, ledger: Ledger, durability: Durability) -> None:
        self._live = live  # its own reads only: callers are given the ports themselves
        self._ledger = ledger
        self._durability = durability
        self._configs: dict[str, tuple[str, LinkConfig]] = {}
        self._table_links: dict[str, str] = {}  # a table never moves to another link (RegisterTable refuses)

    async def config(self, link_id: str, *, fresh: bool = False) -> tuple[str, LinkConfig]:
        """The link's (version, config); `fresh` reads it again."""
        if not fresh and link_id in self._configs:
            return self._configs[link_id]
        require_id("link_id", link_id)
        found = await self._live.config(link_id)
        if found is None:
            if await self._ledger.link_known(link_id):  # the live store forgot it
                raise lost(link_id)
            raise NotFound("link_id", link_id, "no such link")
        self._configs[link_id] = found
        return found

    async def of_table(self, table_id: str) -> str:
        """The link a table belongs to."""
        link = self._table_links.get(table_id)
        if link is not None:
            return link
        require_id("table_id", table_id)
        link = await self._live.link_of_table(table_id)
        if link is None:
            known = await self._ledger.table_link(table_id)
            if known is not None:  # the live store forgot the table's link
                raise lost(known)
            raise NotFound("table_id", table_id, "no such table")
        self._table_links[table_id] = link
        return link

    async def current_link_of(self, table_id: str) -> str | None:
        """The link a table is registered on, if any, as either store knows it (uncached)."""
        return await self._live.link_of_table(table_id) or await self._ledger.table_link(table_id)

    async def read(self, link_id: str, round_: tuple[str, str] | None = None) -> LinkRead:
        """The link's sequence, balances and a round, refused (UNAVAILABLE) when the live store forgot the
        link, went back behind the ledger, or the link is fenced."""
        try:
            return await self._live.read(link_id, self._durability.floor(link_id), round_)
        except LinkLost:
            self.forget(link_id)
            raise

    def changed(self, link_id: str) -> None:
        """The link's config changed: read it again next time."""
        self._configs.pop(link_id, None)

    def forget(self, link_id: str) -> None:
        """Drop what this process cached of a link whose live state was lost."""
        self._configs.pop(link_id, None)
        for table in [t for t, link in self._table_links.items() if link == link_id]:
            del self._table_links[table]
