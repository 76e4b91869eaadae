"""The vocabularies are StrEnums whose values are the strings older versions stored: JSON, canonical JSON, the
ledger's SQL and the Lua ARGV see exactly the bytes they saw when these were plain strings."""

from __future__ import annotations

import json
from enum import StrEnum

import hiredis
import orjson
import pytest

from jackpotd.canonical import canonical_json
from jackpotd.domain.rounds import RoundState
from jackpotd.domain.verification import HitStatus
from jackpotd.store.recovery import RecoveryAction, RecoveryState

STORED = {  # as written into journal entries, ledger rows, Redis keys, logs and metrics before the enums
    HitStatus: ["PAID", "PENDING", "REJECTED"],
    RoundState: ["COMMITTED", "PENDING", "SETTLED", "VOIDED", "LOST"],
    RecoveryState: ["in-step", "ahead", "lost", "behind", "forked"],
    RecoveryAction: ["in-step", "drained", "rebuilt", "fenced", "not drained", "failed"],
}
MEMBERS = [m for vocabulary in STORED for m in vocabulary]


@pytest.mark.parametrize("vocabulary", list(STORED))
def test_the_values_are_the_strings_stored_before(vocabulary: type[StrEnum]) -> None:
    assert [m.value for m in vocabulary] == STORED[vocabulary]


@pytest.mark.parametrize("member", MEMBERS, ids=lambda m: f"{type(m).__name__}.{m.name}")
def test_a_member_encodes_as_its_string(member: StrEnum) -> None:
    plain = str.__str__(member)  # the string itself, not the member
    assert type(plain) is str and plain == member.value
    entry = {"round": {"state": member, "data": "x"}, "hits": [{"status": member}], "seen": [member]}
    as_text = {"round": {"state": plain, "data": "x"}, "hits": [{"status": plain}], "seen": [plain]}
    assert canonical_json(entry) == canonical_json(as_text)
    assert orjson.dumps(entry) == orjson.dumps(as_text)
    assert json.dumps(entry, sort_keys=True) == json.dumps(as_text, sort_keys=True)
    assert f"'{member}' {member}" == f"'{plain}' {plain}" and str(member) == plain  # SQL text, logs, labels
    assert hiredis.pack_command(("EVALSHA", member)) == hiredis.pack_command(("EVALSHA", plain))  # Lua ARGV


def test_a_member_is_no_key_of_canonical_json() -> None:
    """orjson refuses str subclasses as keys: a vocabulary keys no stored mapping (key by `.value` if one must)."""
    with pytest.raises(TypeError):
        canonical_json({HitStatus.PAID: 1})
