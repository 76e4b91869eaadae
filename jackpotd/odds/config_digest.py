"""A link's configuration as the bytes a certificate names: the canonical JSON (jackpotd.canonical, the form the
ledger chains) of LinkConfig.to_dict(), and their SHA-256, the same for jackpotd's GetMath and jackpot-math."""

from __future__ import annotations

import hashlib

from ..canonical import canonical_json
from ..domain.link import LinkConfig


def config_json(config: LinkConfig) -> str:
    """The config's canonical JSON text: sorted keys, no spaces, UTF-8 (what the ledger's entries hold)."""
    return canonical_json(config.to_dict())


def config_sha256(config: LinkConfig) -> str:
    """Hex SHA-256 of config_json's UTF-8 bytes: one configuration, one hash, wherever it was read from."""
    return hashlib.sha256(config_json(config).encode()).hexdigest()
