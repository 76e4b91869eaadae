"""The reports in every format, from the proto messages: each message is converted once (`model`), and every
format renders that dict. The functions a test or another program calls."""

from __future__ import annotations

from collections.abc import Callable

from jackpotd.api.gen.jackpot.v1 import report_pb2

from .html_report import reconciliation_html
from .model import Report, liability_dict, report_dict, verify_dict
from .spreadsheet import reconciliation_csv
from .text import as_json, liability_text, reconciliation_text, verify_text

RECONCILIATION_FORMATS: dict[str, Callable[[Report], str]] = {
    "text": reconciliation_text, "csv": reconciliation_csv, "json": as_json, "html": reconciliation_html}


def render_reconciliation(rec: report_pb2.Reconciliation, fmt: str) -> str:
    """A reconciliation as text, csv, json or html."""
    return RECONCILIATION_FORMATS[fmt](report_dict(rec))


def render_liability(liab: report_pb2.Liability, fmt: str) -> str:
    """The liability as text or json."""
    return as_json(liability_dict(liab)) if fmt == "json" else liability_text(liability_dict(liab))


def render_verification(resp: report_pb2.VerifyLedgerResponse, fmt: str) -> str:
    """The ledger's verification as text or json."""
    return as_json(verify_dict(resp)) if fmt == "json" else verify_text(verify_dict(resp))
