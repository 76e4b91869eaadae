"""The ledger export's CSV (spreadsheet.EXPORT_COLUMNS) written from a page of columns with few Python operations a
row: the same bytes as csv.writer over spreadsheet.export_rows, entry by entry. A page holding a character that
csv.writer would quote (, " CR LF) or refuse (NUL) in a cell made here is written by them instead, as are hit rows."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from itertools import accumulate, repeat
from operator import floordiv, mod

from jackpotd.api.gen.jackpot.v1 import report_pb2

from .ledger_columns import entries_of
from .money import UC_PER_CENT, UC_PER_DOLLAR, dollars
from .spreadsheet import (
    FORMULA_STARTS,
    HIT_COLUMNS,
    POSTING_COLUMNS,
    Hits,
    _cell,
    export_rows,
    hit_rows,
    json_hits,
    text,
    to_csv,
)
from .times import utc_second

QUOTED = (",", '"', "\r", "\n", "\x00")  # a cell holding one of these is quoted (NUL: refused) by csv.writer
POSTING_END = "," * (len(HIT_COLUMNS) + 1)  # a posting row's empty hit cells, up to its hash
ENTRY_ROW = "entry" + "," * (len(POSTING_COLUMNS) + len(HIT_COLUMNS) + 1)  # an entry with no posting nor hit
HIT_MARKS = ('"hits"', '"decision"')  # an entry without either has no hit row (spreadsheet.json_hits)
CACHED = 65_536  # values each cache below holds at most (emptied when full)

_fractions: dict[int, str] = {}  # µ¢ below a dollar -> its places as `dollars` writes them (".5", ".00000001")
_postings: dict[tuple[int, str, int], str] = {}  # (index, account, amount) -> a posting row's cells up to its balance


def _fraction(frac: int) -> str:
    """The decimal point and places of `frac` µ¢ (under a dollar), exactly as `dollars` writes them."""
    places = f".{frac // UC_PER_CENT:02d}" if frac % UC_PER_CENT == 0 else f".{frac:08d}".rstrip("0")
    if len(_fractions) >= CACHED:
        _fractions.clear()
    _fractions[frac] = places
    return places


def _posting(k: int, account: str, uc: int) -> str:
    """`posting,k,account,amount,dollars,` of a posting row (made once: a ledger repeats its contributions)."""
    cells = f"posting,{k},{_cell(account)},{uc},{dollars(uc)},"
    if len(_postings) >= CACHED:
        _postings.clear()
    _postings[(k, account, uc)] = cells
    return cells


def _plain(*columns: Sequence[str]) -> bool:
    """Whether no cell made here from these texts would be quoted (then a row is its cells and commas)."""
    every = "".join(["".join(c) for c in columns])
    return not any(q in every for q in QUOTED)


def _inert(values: list[str]) -> list[str]:
    """`text` of each value (a leading apostrophe where one would start a formula), the list itself when none."""
    return list(map(text, values)) if any(map(str.startswith, values, repeat(FORMULA_STARTS))) else values


def _with_hits(texts: list[str]) -> list[int]:
    """The entries whose text holds a hit's mark (json_hits reads them; no other has a hit row), in order."""
    every, ends = "".join(texts), list(accumulate(map(len, texts)))
    found: set[int] = set()
    for mark in HIT_MARKS:  # an entry is one JSON value ({...}): a mark cannot straddle two of them
        at = every.find(mark)
        while at >= 0:
            i = bisect_right(ends, at)
            found.add(i)
            at = every.find(mark, ends[i])
    return sorted(found)


def page_csv(c: report_pb2.LedgerColumns, seen: Hits) -> str:
    """The page's rows as CSV text (CRLF ends), byte for byte as csv.writer writes spreadsheet.export_rows of each
    of its entries in turn; `seen` is the export's hits met so far, as for export_rows."""
    kinds, requests, tables, rounds = list(c.kind), list(c.request_id), list(c.table_id), list(c.round_id)
    hashes, prevs, accounts = list(c.hash_hex), list(c.prev_hash_hex), list(c.account)
    if not _plain([c.link_id], kinds, requests, tables, rounds, hashes, prevs, accounts):
        return to_csv([row for e in entries_of(c) for row in export_rows(e, seen)])
    link, seqs, counts = text(c.link_id), list(c.sequence), list(c.posting_count)
    ats = list(c.at_ms)
    times = _inert(list(map("{}.{:03d}Z".format, map(utc_second, map(floordiv, ats, repeat(1000))),
                            map(mod, ats, repeat(1000)))))  # times.utc_iso, without a Python call an entry
    kinds, requests, tables, rounds = list(map(_cell, kinds)), _inert(requests), _inert(tables), _inert(rounds)
    hashes, prevs = _inert(hashes), _inert(prevs)
    ks = [k for n in counts for k in range(n)]
    cells, places, afters = _postings.get, _fractions.get, list(c.balance_after_ucents)
    middles = [f"{cells((k, a, uc)) or _posting(k, a, uc)}{after},{'-' if after < 0 else ''}{whole}"
               f"{places(frac) or _fraction(frac)}"  # dollars(after), inline
               for k, a, uc, after, (whole, frac) in zip(ks, accounts, c.amount_ucents, afters,
                                                        map(divmod, map(abs, afters), repeat(UC_PER_DOLLAR)),
                                                        strict=True)]
    texts = list(c.entry_json)
    hits = _with_hits(texts)
    next_hit = hits.pop(0) if hits else -1
    out: list[str] = []
    start = 0
    for i, n in enumerate(counts):
        head = f"{link},{seqs[i]},{times[i]},{kinds[i]},{requests[i]},{tables[i]},{rounds[i]},"
        tail = f"{hashes[i]},{prevs[i]}\r\n"
        if n:
            end = POSTING_END + tail
            out.append(head + (end + head).join(middles[start:start + n]) + end)
            start += n
        found = []
        if i == next_hit:
            found = json_hits(texts[i], seen)
            next_hit = hits.pop(0) if hits else -1
        if found:  # rare: written by csv.writer (a hit's hand, rule or approver may need quoting)
            out.append(to_csv(hit_rows([link, seqs[i], times[i], kinds[i], requests[i], tables[i], rounds[i]],
                                       [hashes[i], prevs[i]], found)))
        elif not n:
            out.append(f"{head}{ENTRY_ROW}{tail}")
    return "".join(out)
