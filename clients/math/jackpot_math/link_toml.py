"""The one codec of link configurations from TOML (issue 24): a file in the terms of CreateLink (its top-level keys
are CreateLinkRequest's fields), read into that request and made a LinkConfig by the servicer's own function
(jackpotd.api.link_requests.link_config_of); optional [[paytables]] (SetPaytable), [[tables]] (RegisterTable),
[play] and [balances]."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jackpotd.api.gen.jackpot.v1 import admin_pb2
from jackpotd.api.link_requests import link_config_of, paytable_entries_of, table_of
from jackpotd.domain.errors import DomainError
from jackpotd.domain.link import LinkConfig
from jackpotd.domain.money import MAX_SAFE_UC
from jackpotd.domain.pools import RESERVE
from jackpotd.odds.play import DEFAULT_HANDS_PER_HOUR, DEFAULT_SEATS_FILLED, Play, play_of
from jackpotd.service import commands as c
from jackpotd.service.decide.admin import changed

from .toml_shape import BadInput, bad, message_of, read_toml, table_at, tables_at

EXTRA_KEYS = ("paytables", "tables", "play", "balances")  # beside CreateLinkRequest's fields
PLAY_KEYS = ("tables", "seats_filled", "hands_per_hour")
UC = 1_000_000
NO_REQUEST = c.Request("jackpot-math", {})  # a change read from a file is never sent: it needs no request id
NO_AUDIT = c.Audit()


@dataclass(frozen=True, slots=True)
class PlayFlags:
    """How the link is played, as a file or the flags say it (None: jackpotd.odds.play's defaults)."""

    tables: int | Mapping[str, int] | None = None
    seats_filled: int | None = None
    hands_per_hour: int | None = None


@dataclass(frozen=True, slots=True)
class LinkFile:
    """A link read from a TOML file: its config, how it is played, its starting balances (µ¢) and the file's
    path and SHA-256 (the certificate's source)."""

    config: LinkConfig
    play: PlayFlags
    balances_uc: Mapping[str, int]
    path: str
    file_sha256: str
    source: Mapping[str, str] = field(default_factory=dict)


def domain_key(error: DomainError, request: Mapping[str, Any]) -> str:
    """A domain error's message with its field named as the file names it where the two differ: `rates[MAJOR]`
    is `rates.pools[0].ppm`, `pools[MINOR].cap_cents` is `pools[1].cap_cents`."""
    text = str(error)
    rates = request.get("rates", {}) if isinstance(request.get("rates"), dict) else {}
    rated = [p.get("pool") for p in rates.get("pools", []) if isinstance(p, dict)]
    pools = [p.get("pool") for p in request.get("pools", []) if isinstance(p, dict)]
    if m := re.fullmatch(r"rates\[(.+?)\]", error.field):
        name = m.group(1)
        key = "rates.retained_ppm" if name == "retained" else (
            f"rates.pools[{rated.index(name)}].ppm" if name in rated else error.field)
        return text.replace(error.field, key, 1)
    if (m := re.fullmatch(r"pools\[(.+?)\]\.(\w+)", error.field)) and m.group(1) in pools:
        return text.replace(error.field, f"pools[{pools.index(m.group(1))}].{m.group(2)}", 1)
    return text


def apply_paytables(config: LinkConfig, items: list[dict[str, Any]]) -> LinkConfig:
    """Each [[paytables]] table (SetPaytableRequest's game and entries) applied as SetPaytable applies it."""
    for i, item in enumerate(items):
        request = message_of(item, admin_pb2.SetPaytableRequest, f"paytables[{i}].")
        try:
            cmd = c.SetPaytable(NO_REQUEST, config.link_id, request.game, paytable_entries_of(request.entries),
                                NO_AUDIT)
            config = changed(cmd, config, 0)
        except DomainError as e:
            raise BadInput(f"paytables[{i}]: {e}") from None
    return config


def apply_tables(config: LinkConfig, items: list[dict[str, Any]]) -> LinkConfig:
    """Each [[tables]] table (RegisterTableRequest's table_id, game, seats) registered as RegisterTable does."""
    for i, item in enumerate(items):
        request = message_of(item, admin_pb2.RegisterTableRequest, f"tables[{i}].")
        try:
            config = changed(c.RegisterTable(NO_REQUEST, config.link_id, table_of(request), NO_AUDIT), config, 0)
        except DomainError as e:
            raise BadInput(f"tables[{i}].{e}") from None
    return config


def play_flags(doc: Mapping[str, Any]) -> PlayFlags:
    """[play]: tables (a number, or a table of tables per game), seats_filled, hands_per_hour; checked here for
    shape (the numbers' ranges are jackpotd.odds.play.Play's)."""
    play = table_at(doc, "play")
    for key, value in play.items():
        if key not in PLAY_KEYS:
            raise bad(f"play.{key}", value, f"unknown key; known keys here: {', '.join(PLAY_KEYS)}")
        if key == "tables" and isinstance(value, dict):
            for game, n in value.items():
                if isinstance(n, bool) or not isinstance(n, int):
                    raise bad(f"play.tables.{game}", n, "must be a whole number of tables")
        elif isinstance(value, bool) or not isinstance(value, int):
            raise bad(f"play.{key}", value, "must be a whole number" + (
                " or a table of tables per game ({\"caribbean-stud\" = 20})" if key == "tables" else ""))
    tables = play.get("tables")
    return PlayFlags(dict(tables) if isinstance(tables, dict) else tables, play.get("seats_filled"),
                     play.get("hands_per_hour"))


def play_of_flags(config: LinkConfig, flags: PlayFlags) -> Play:
    """The Play the flags (or the file's [play]) describe, with jackpotd.odds.play's defaults for what they leave
    out; BadInput naming `play.<key>` for a value Play refuses."""
    if flags.seats_filled is not None and flags.seats_filled < 1:  # play_of reads 0 as "the default"
        raise bad("play.seats_filled", flags.seats_filled, "must be from 1 to 100,000")
    try:
        if isinstance(flags.tables, Mapping):
            return Play(dict(flags.tables), flags.seats_filled or DEFAULT_SEATS_FILLED,
                        DEFAULT_HANDS_PER_HOUR if flags.hands_per_hour is None else flags.hands_per_hour)
        return play_of(config, flags.tables, flags.seats_filled,
                       DEFAULT_HANDS_PER_HOUR if flags.hands_per_hour is None else flags.hands_per_hour)
    except DomainError as e:
        raise BadInput(f"play.{e}") from None


def starting_balances(config: LinkConfig, doc: Mapping[str, Any]) -> dict[str, int]:
    """[balances] in cents per pool, as µ¢; a pool not named starts at its reset value (RESERVE at 0)."""
    given = table_at(doc, "balances")
    names = [p.name for p in config.pools]
    for pool, cents in given.items():
        if pool not in names:
            raise bad(f"balances.{pool}", cents, f"not a pool of the link; its pools: {', '.join(names)}")
        if isinstance(cents, bool) or not isinstance(cents, int) or not 0 <= cents <= MAX_SAFE_UC // UC:
            raise bad(f"balances.{pool}", cents,
                      f"must be a whole number of cents from 0 to {MAX_SAFE_UC // UC:,} (§2: the most a pool holds)")
    return {p.name: UC * given.get(p.name, 0 if p.name == RESERVE else p.reset_cents) for p in config.pools}


def link_of(doc: Mapping[str, Any]) -> tuple[LinkConfig, PlayFlags, dict[str, int]]:
    """A TOML document as a link: CreateLink's fields through link_config_of, then its paytables and tables."""
    fields = admin_pb2.CreateLinkRequest.DESCRIPTOR.fields_by_name
    for key, value in doc.items():
        if key not in fields and key not in EXTRA_KEYS:
            raise bad(key, value, f"unknown key; known keys: CreateLinkRequest's ({', '.join(fields)}) and "
                                  f"{', '.join(EXTRA_KEYS)}")
    create = {k: v for k, v in doc.items() if k not in EXTRA_KEYS}
    request = message_of(create, admin_pb2.CreateLinkRequest)
    try:
        config = link_config_of(request)
    except DomainError as e:
        raise BadInput(domain_key(e, create)) from None
    config = apply_tables(apply_paytables(config, tables_at(doc, "paytables")), tables_at(doc, "tables"))
    return config, play_flags(doc), starting_balances(config, doc)


def load_link(path: Path) -> LinkFile:
    """The link a TOML file describes; BadInput naming the file, then the key and value, when it describes none."""
    raw, doc = read_toml(path)
    try:
        config, play, balances = link_of(doc)
    except BadInput as e:
        raise BadInput(f"{path}: {e}") from None
    digest = hashlib.sha256(raw).hexdigest()
    return LinkFile(config, play, balances, str(path), digest, {"kind": "file", "path": str(path), "sha256": digest})
