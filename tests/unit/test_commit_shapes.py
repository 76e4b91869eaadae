"""A commit's shape shared across equal commits (decide/table.py, shared_shape) and a small commit's result encoded
once (replies.encode_result): the step and the stored text are exactly those of a commit decided afresh."""

from __future__ import annotations

from dataclasses import replace

import pytest

from jackpotd.api import commit_reply
from jackpotd.api.commit_reply import commit_response
from jackpotd.api.gen.jackpot.v1 import common_pb2, table_pb2
from jackpotd.canonical import canonical_json
from jackpotd.domain.pools import MAJOR
from jackpotd.domain.rates import RateSet
from jackpotd.domain.rounds import Wager
from jackpotd.service import replies
from jackpotd.service.commands import Commit, Request
from jackpotd.service.decide import table as decide
from jackpotd.service.decide.table import commit_shape, decide_commit, shared_shape
from jackpotd.service.replies import Accepted, CommitResult, encode_result, stored_form
from jackpotd.service.results import Committed, PoolView
from jackpotd.store.lua_codec import apply_call

from .test_decide_table import NOW, fresh, link


def commit(request_id: str, round_id: str, *seats: int, table: str = "T") -> Commit:
    content = {"table_id": table, "round_id": round_id, "wagers": [[s, 100, True] for s in seats]}
    return Commit(Request(request_id, content, f"table:{table}"), table, round_id, [Wager(s, 100, True) for s in seats])


def test_equal_commits_share_one_shape_and_step_as_if_decided_afresh() -> None:
    config = link()
    first = decide_commit(commit("a", "r1", 1, 2, 3), config, "v1", fresh())
    second = decide_commit(commit("b", "r2", 3, 1, 2), config, "v1", fresh())
    assert second.result is first.result and second.round_data == first.round_data  # shared, not rebuilt
    afresh = commit_shape(config.rate_sets[0], config.pools, "caribbean-stud", ((1, 100), (2, 100), (3, 100)), {})
    assert (second.result, second.round_data, second.deltas) == (afresh.result, afresh.round_data, first.deltas)
    # what differs per request stays its own: the entry's key, round and hash, and so the whole apply call
    assert second.request_id == "table:T:b" and second.round == ("T", "r2") and second.entry != first.entry
    assert apply_call(second, 0, "") != apply_call(first, 0, "")


def test_a_shape_is_not_shared_across_rate_sets_games_or_wagers() -> None:
    config = link()
    rates = config.rate_sets[0]
    other = RateSet({**rates.pools_ppm, MAJOR: rates.pools_ppm[MAJOR] - 1}, rates.retained_ppm + 1, rates.version)
    seats = ((1, 100), (2, 100))
    base = shared_shape(rates, config.pools, "caribbean-stud", seats)
    assert shared_shape(other, config.pools, "caribbean-stud", seats).merged != base.merged  # same version, other ppm
    assert shared_shape(replace(rates, version=2), config.pools, "caribbean-stud", seats).round_data != base.round_data
    assert shared_shape(rates, config.pools, "texas", seats).round_data != base.round_data
    assert shared_shape(rates, config.pools, "caribbean-stud", ((1, 100),)).result != base.result


def test_a_capped_link_decides_every_commit_against_its_balances() -> None:
    config = link(major_cap=1_000_000)
    full = decide_commit(commit("a", "r1", 1), config, "v1", fresh({MAJOR: 1_000_000 * 1_000_000}))
    empty = decide_commit(commit("b", "r2", 1), config, "v1", fresh({MAJOR: 0}))
    assert full.result != empty.result and full.result is not empty.result


def test_the_kept_shapes_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(decide, "SHAPES_KEPT", 3)
    monkeypatch.setattr(decide, "_shapes", {})
    config = link()
    for n in range(1, 8):
        decide_commit(commit(f"q{n}", f"r{n}", *range(1, n + 1)), config, "v1", fresh())
        assert len(decide._shapes) <= 3


def test_a_result_is_encoded_once_and_exactly_as_afresh() -> None:
    step = decide_commit(commit("a", "r1", 1, 2), link(), "v1", fresh())
    assert isinstance(step.result, CommitResult)
    text = encode_result(step.result)
    assert encode_result(step.result) is text  # the same text object: kept, not made again
    equal = CommitResult(tuple(step.result.accepted))  # equal, but another object: encoded on its own
    assert encode_result(equal) == text == canonical_json(stored_form(step.result))
    assert NOW  # the state's clock: shapes never hold it


def old_response(done: Committed) -> table_pb2.CommitWagersResponse:
    """The response as CommitWagers built it before its accepted wagers were kept (de9ebae)."""
    response = table_pb2.CommitWagersResponse(sequence=done.seq, link_id=done.link_id)
    for seat, amount, contributed, overflow in done.accepted:
        kw = {"overflow_ucents": overflow} if overflow else {}
        response.accepted.add(seat=seat, amount_cents=amount, contributed_ucents=contributed, **kw)
    response.pools.extend(common_pb2.PoolAmount(pool=p.pool, amount_cents=p.amount_cents, reset_cents=p.reset_cents,
                                                balance_ucents=p.balance_ucents) for p in done.pools)
    return response


def test_a_commit_response_is_byte_for_byte_the_one_built_afresh() -> None:
    shared = (Accepted(1, 100, 250_000_000, 0), Accepted(2, 100, 250_000_000, 7))
    pools = (PoolView("major", 12, 1_000_000, 12_345_678), PoolView("minor", 0, 100_000, 999))
    for n, accepted in enumerate([shared, shared, shared, tuple(shared), (), shared[:1]]):  # first, second, kept
        done = Committed(n + 1, "L" if n % 2 else "", pools[: n % 3], accepted)
        made = commit_response(done)
        assert made == old_response(done)
        assert made.SerializeToString() == old_response(done).SerializeToString()


def test_the_kept_accepted_wagers_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(commit_reply, "KEPT", 2)
    monkeypatch.setattr(commit_reply, "_seen", {})
    kept = [tuple(Accepted(s, 100, n, 0) for s in range(1, 3)) for n in range(5)]
    for accepted in kept:
        commit_response(Committed(1, "L", (), accepted))
        assert len(commit_reply._seen) <= 2
    big = tuple(Accepted(s, 100, 1, 0) for s in range(1, commit_reply.SMALL + 2))
    commit_response(Committed(1, "L", (), big))
    assert id(big) not in commit_reply._seen  # a big round is not kept


def test_the_kept_texts_are_bounded_and_only_small_commits_are_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(replies, "ENCODED_KEPT", 2)
    monkeypatch.setattr(replies, "_ENCODED", {})
    results = [CommitResult((Accepted(1, 100, n, 0),)) for n in range(5)]
    for result in results:
        assert encode_result(result) == canonical_json(stored_form(result))
        assert len(replies._ENCODED) <= 2
    big = CommitResult(tuple(Accepted(s, 100, 1, 0) for s in range(1, replies.RUNS_FROM + 2)))
    assert encode_result(big) == canonical_json(stored_form(big)) and id(big) not in replies._ENCODED
