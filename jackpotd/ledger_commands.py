"""The ledger's operator commands: `jackpotd recover`, `audit`, `fenced` and `unfence` (cli.py parses them)."""

from __future__ import annotations

import argparse
import getpass
import socket
import sys

from .domain.ids import visible
from .domain.money import format_cents
from .service.errors import Unavailable
from .settings import Settings
from .software.identity import software_identity
from .store import checkpoints, ledger, recovery, unfence
from .store.checkpoints import Checkpointer
from .store.leader import writers_running
from .store.ledger.head_guard import Tampered
from .stores import Stores


def anchors(settings: Settings) -> Checkpointer | None:
    """The anchors kept outside the database, when a checkpoint key is configured (or embedded's default exists)."""
    return checkpoints.checkpointer_of(settings.checkpoint_key_file, settings.checkpoints)


def operator() -> str:
    """Who runs an operator's command, as the audit trail records it: the host's account, on which host."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "uid-unknown"
    return f"operator:{user}@{socket.gethostname()}"


async def recover(stores: Stores, settings: Settings) -> int:
    """`jackpotd recover`: only while no ledger writer runs (a running writer recovers its links itself, and a
    second one appending beside it would be taken for tampering)."""
    writers = await writers_running(stores.pg)
    if writers:
        print(f"jackpotd: {writers} ledger writer(s) are running: they recover every link by themselves; stop them "
              "before recovering by hand", file=sys.stderr)
        return 1
    for a in await recovery.recover(stores.redis, stores.pg, anchors=anchors(settings)):
        print(f"{a.link_id}: {a.said} (Redis seq {a.redis_seq}, ledger seq {a.ledger_seq})")
    return 0


async def fenced(stores: Stores, settings: Settings) -> int:
    """Each fenced link, why, and what the ledger is now against its anchors; exit 1 when any is fenced."""
    views = await unfence.fenced(stores.redis, stores.pg, anchors(settings))
    for v in views:
        f = v.fence
        print(visible(f"{f.link_id}: fenced since {f.fenced_at:%Y-%m-%d %H:%M:%S %Z} ({f.kind.value}) at entry "
                      f"{f.seq} ({v.entry})") + f"\n  why: {visible(f.text)}")
        if isinstance(v.verdict, Tampered):
            print(f"  now: {visible(v.verdict.reason)}\n  what to do: {visible(unfence.advice(v.verdict))}")
        elif v.verdict is not None and f.kind.tampered:
            print(f"  now: the ledger's head (entry {v.verdict.head.seq}) is backed by its anchors again: lift the "
                  "fence with `jackpotd unfence LINK --reason ...`")
        elif v.verdict is None:
            print("  now: no anchors are kept (no checkpoint key): the ledger cannot be checked against them")
    if not views:
        print("no link is fenced")
    return 1 if views else 0


async def lift(stores: Stores, settings: Settings, args: argparse.Namespace) -> int:
    """`jackpotd unfence`: exit 0 when lifted (or not fenced), 1 when the ledger is still not backed."""
    act = unfence.Act(operator(), args.reason, discard=args.discard, restore=args.restore, accept=args.accept)
    outcome = await unfence.unfence(stores.redis, stores.pg, args.link, act, anchors(settings))
    if isinstance(outcome, unfence.NotFenced):
        print(f"link {args.link} is not fenced")
        return 0
    if isinstance(outcome, unfence.StillTampered):
        print(f"jackpotd: link {args.link} stays fenced: {visible(outcome.advice)}", file=sys.stderr)
        return 1
    print(visible(f"link {args.link}: {outcome.how} as {act.actor} (head entry {outcome.head}); recorded in the "
                  "audit trail"))
    if act.accept or act.restore:  # finance's summaries counted what was removed, or count what came back twice
        await _rebuild_summaries(stores, args.link)
    return 0


async def _rebuild_summaries(stores: Stores, link: str) -> None:
    """Finance's summaries of the link derived again from its entries, as the ledger's owner."""
    from .store.ledger import summaries

    def done(link: str, entries: int, rows: int) -> None:
        print(f"link {link}: finance's summaries derived again from its {entries} entries ({rows} rows)")

    try:
        await summaries.rebuild_links(stores.owner_dsn or stores.dsn, [link], done)
    except Unavailable as e:
        print(f"jackpotd: finance's summaries of {link} could not be derived again ({e}): run `jackpotd "
              f"rebuild-summaries --link {link}` as the ledger's owner", file=sys.stderr)


async def audit(stores: Stores, settings: Settings, args: argparse.Namespace) -> int:
    """Every link's ledger recomputed, checked against Redis and against the anchors; exit 1 on any problem.
    Redis is not compared when this command started the embedded Valkey itself (no jackpotd runs on the state
    directory): that Valkey keeps nothing while jackpotd is stopped, and jackpotd rebuilds it from the ledger."""
    failed = 0
    print(f"audited by {software_identity().line()}")  # the software that produced this report
    live = stores.embedded is None  # embedded and started here: empty by design, nothing to compare
    if not live:
        print("Redis not compared: jackpotd is not running on this state directory, and its embedded Valkey keeps "
              "nothing while jackpotd is stopped (jackpotd rebuilds it from the ledger when it starts); the ledger, "
              "its chain and its anchors are checked")
    heads = await ledger.heads(stores.pg)
    anchored: dict[str, list[checkpoints.Checkpoint]] = {}
    if args.checkpoints or settings.checkpoint_key_file:
        if not settings.checkpoint_key_file:
            print("jackpotd: --checkpoints needs --checkpoint-key-file", file=sys.stderr)
            return 2
        where = args.checkpoints or settings.checkpoints
        anchored, bad = checkpoints.load(where, checkpoints.read_key(settings.checkpoint_key_file))
        print(f"checkpoints in {where}: {sum(map(len, anchored.values()))} verified, {len(bad)} refused")
        for problem in bad:
            print(f"  - {problem}")
        for link in sorted(set(anchored) - set(heads)):
            print(f"{link}: FAILED - checkpoints name it but the ledger has no such link")
            bad.append(link)
        failed += len(bad)
    else:
        print("no checkpoint key: the chain is checked against itself only (a consistent rewrite would pass)")
    for link in sorted(heads):
        redis_pools, redis_seq = ((await stores.redis.balances(link), await stores.redis.seq(link)) if live
                                  else ({}, 0))
        report = await ledger.audit_link(stores.pg, link, redis_pools, redis_seq, anchored.get(link, ()),
                                         redis_compared=live)
        verdict = "OK" if report.ok else "FAILED"
        pools = ", ".join(f"{k} {format_cents(v // 1_000_000)}" for k, v in sorted(report.ledger_pools.items()))
        print(f"{link}: {verdict} - {report.entries} entries, chain {'intact' if report.chain_ok else 'BROKEN'}, "
              f"pools {pools}")
        for problem in report.problems:
            print(f"  - {visible(problem)}")
        for note in report.notes:
            print(f"  * {visible(note)}")
        failed += not report.ok
    return 1 if failed else 0
