"""The ledger export's provenance: a sidecar FILE.csv.provenance.json beside the CSV, naming the software that
produced it and the CSV's SHA-256, so the CSV itself stays plain rows that any spreadsheet reads unchanged."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from jackpotd.software.identity import software_identity

SCHEMA = "jackpot-report-export-provenance/1"


def provenance_path(csv_path: Path) -> Path:
    """Where the sidecar of `csv_path` is written: the same name with .provenance.json added."""
    return csv_path.with_name(csv_path.name + ".provenance.json")


def provenance(csv_bytes_sha256: str, csv_name: str, link: str, entries: int, postings: int) -> dict[str, Any]:
    """The sidecar's document: what was exported, the CSV's digest, and the producing software's identity."""
    return {"schema": SCHEMA, "file": csv_name, "sha256": csv_bytes_sha256, "link_id": link, "entries": entries,
            "postings": postings,
            "generated_at": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
            "software": software_identity().as_dict()}


def write_provenance(written: Path, out: Path, link: str, entries: int, postings: int) -> Path:
    """The sidecar of the CSV `written` (still under its temporary name) that will be renamed to `out`, written
    whole by way of a temporary file; its path."""
    with written.open("rb") as f:
        digest = hashlib.file_digest(f, "sha256").hexdigest()
    target = provenance_path(out)
    partial = target.with_name(target.name + ".partial")
    partial.write_text(json.dumps(provenance(digest, out.name, link, entries, postings), indent=2) + "\n")
    partial.replace(target)
    return target
