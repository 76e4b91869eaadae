"""`--what-if CHANGE.toml`: a proposed SetRates and/or UpdateLink, read into those requests, made the service's
commands as the servicer makes them, and applied to a config by the service's own pure decision
(jackpotd.service.decide.admin.changed): the proposal is exactly what jackpotd would make of the change."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jackpotd.api.gen.jackpot.v1 import admin_pb2
from jackpotd.api.link_requests import set_rates_of, update_link_of
from jackpotd.domain.errors import DomainError
from jackpotd.domain.link import LinkConfig
from jackpotd.service import commands as c
from jackpotd.service.decide.admin import changed

from .link_toml import NO_REQUEST, domain_key
from .toml_shape import BadInput, bad, message_of, read_toml

CHANGE_KEYS = ("set_rates", "update_link")  # applied in this order: the rates of the pools as they stand


def commands_of(doc: Mapping[str, Any], link_id: str) -> list[c.ConfigCommand]:
    """[set_rates] (SetRatesRequest's `rates` fields: pools, retained_ppm, effective_at_ms) and [update_link]
    (UpdateLinkRequest's fields) as the service's SetRates and UpdateLink on `link_id`."""
    for key, value in doc.items():
        if key not in CHANGE_KEYS:
            raise bad(key, value, f"unknown key; a change is [{'] and/or ['.join(CHANGE_KEYS)}]")
        if not isinstance(value, dict):
            raise bad(key, value, f"must be a table ([{key}])")
    if not doc:
        raise BadInput(f"the change is empty: give [{'] and/or ['.join(CHANGE_KEYS)}]")
    out: list[c.ConfigCommand] = []
    if "set_rates" in doc:
        rates = message_of({"rates": doc["set_rates"]}, admin_pb2.SetRatesRequest, "set_")
        rates.link_id = link_id
        out.append(set_rates_of(rates, NO_REQUEST, c.Audit()))
    if "update_link" in doc:
        update = message_of(doc["update_link"], admin_pb2.UpdateLinkRequest, "update_link.")
        update.link_id = link_id
        out.append(update_link_of(update, NO_REQUEST, c.Audit()))
    return out


def proposed(config: LinkConfig, doc: Mapping[str, Any], now_ms: int) -> LinkConfig:
    """The config after the change, as jackpotd would decide it at `now_ms` (a new rate set's version is the
    next, in force from its effective time or now); BadInput naming the key when jackpotd would refuse it."""
    for cmd in commands_of(doc, config.link_id):
        where = "set_rates" if isinstance(cmd, c.SetRates) else "update_link"
        try:
            config = changed(cmd, config, now_ms)
        except DomainError as e:
            section = doc[where]
            if where == "set_rates":
                text = domain_key(e, {"rates": section})
                raise BadInput(f"set_{text}" if text.startswith("rates") else f"set_rates: {text}") from None
            raise BadInput(f"update_link.{domain_key(e, section)}") from None
    return config


def load_change(path: Path, config: LinkConfig, now_ms: int) -> LinkConfig:
    """The proposal a change file makes of `config`; BadInput naming the file, then the key and value."""
    _, doc = read_toml(path)
    try:
        return proposed(config, doc, now_ms)
    except BadInput as e:
        raise BadInput(f"{path}: {e}") from None
