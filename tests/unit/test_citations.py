"""Every citation points inside the repository (issue 20): a cited document exists in the repository, a
"RULES.md §N" (or a bare "§N", which means the same) names a section docs/RULES.md has, a named section
of ARCHITECTURE.md, API.md or the README exists there, a relative Markdown link reaches a file, and no
file points at a path outside the clone (the spec's old home, ../shared)."""

from __future__ import annotations

import re
import subprocess
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "docs" / "RULES.md"
THIS = Path(__file__).resolve().relative_to(ROOT).as_posix()

TEXT = {".py", ".pyi", ".md", ".proto", ".sql", ".lua", ".sh", ".toml", ".yaml", ".yml", ".cfg", ".ini", ".txt",
        ".html", ".js", ".css", ".j2", ".conf", ""}
OUTSIDE = re.compile(r"\.\./shared\b|\bshared/(?:docs|rules)\b|/work/(?:shared|main)\b")
DOC = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*)([A-Z][A-Z0-9_]*\.md)\b")
SECTION_NUMBER = r"\d+(?:\.\d+)*"
SECTION = re.compile(rf"§\s?({SECTION_NUMBER})(?:\s?[-–]\s?§?({SECTION_NUMBER}))?")
NAMED = re.compile(r"(?<![\w/])(?:docs/)?(ARCHITECTURE\.md|API\.md|README(?:\.md)?)"
                   r"(,\s*|\s+)(\"[^\"]+\"|[^)(;:.,\"\n`]+)")
LINK = re.compile(r"\]\(([^)#\s]+\.md)(?:#[^)]*)?\)")
HEADING_NUMBER = re.compile(rf"^#+\s+§?({SECTION_NUMBER})[.\s]", re.M)


@cache
def tracked() -> tuple[str, ...]:
    """The repository's tracked files (what a clone holds); without git, the files of the tree."""
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
        return tuple(p for p in out.decode().split("\0") if p)
    except (OSError, subprocess.CalledProcessError):
        skip = {".git", ".venv", "node_modules", "__pycache__", "build", "dist"}
        return tuple(p.relative_to(ROOT).as_posix() for p in sorted(ROOT.rglob("*"))
                     if p.is_file() and not skip & set(p.relative_to(ROOT).parts))


def texts() -> list[tuple[str, str]]:
    """(path, text) of every tracked text file."""
    found = []
    for rel in tracked():
        path = ROOT / rel
        if rel == THIS or Path(rel).suffix not in TEXT or not path.is_file():
            continue
        try:
            found.append((rel, path.read_text(encoding="utf-8")))
        except UnicodeDecodeError:
            continue
    return found


@cache
def rules_sections() -> frozenset[str]:
    return frozenset(HEADING_NUMBER.findall(RULES.read_text(encoding="utf-8")))


def _numbers(first: str, last: str | None) -> list[str]:
    """A section and, for a range §2-5, every top-level section it spans."""
    if not last:
        return [first]
    if "." in first or "." in last:
        return [first, last]
    return [str(n) for n in range(int(first), int(last) + 1)]


def _where(rel: str, text: str, at: int) -> str:
    line = text.count("\n", 0, at) + 1
    return f"{rel}:{line}: {text.splitlines()[line - 1].strip()[:120]}"


def test_the_spec_is_in_the_repository() -> None:
    for name in ("RULES.md", "ARCHITECTURE.md", "API.md", "DECISIONS.md"):
        assert f"docs/{name}" in tracked(), f"docs/{name} is not in the repository"
    assert {str(n) for n in range(1, 11)} | {f"5.{n}" for n in range(1, 9)} <= rules_sections()


def test_no_file_points_outside_the_repository() -> None:
    bad = [_where(rel, text, m.start()) for rel, text in texts() for m in OUTSIDE.finditer(text)]
    assert not bad, "paths outside the repository:\n" + "\n".join(bad)


def test_every_cited_document_is_in_the_repository() -> None:
    names = {Path(p).name for p in tracked()}
    bad = []
    for rel, text in texts():
        for m in DOC.finditer(text):
            prefix, name = m.groups()
            if rel == "docs/RULES.md" and name == "DOMAIN.md":
                continue  # its table maps the old citations to the new ones
            if prefix:
                if not ((ROOT / prefix / name).is_file() or (ROOT / rel).parent.joinpath(prefix, name).is_file()):
                    bad.append(_where(rel, text, m.start()))
            elif name not in names:
                bad.append(_where(rel, text, m.start()))
    assert not bad, "documents not in the repository:\n" + "\n".join(bad)


def test_every_cited_section_of_the_rules_exists() -> None:
    """"RULES.md §3, §10" and a bare "§5.7" (a module's citations of the rules) name headings of RULES.md."""
    have = rules_sections()
    bad = []
    for rel, text in texts():
        for m in SECTION.finditer(text):
            for number in _numbers(m.group(1), m.group(2)):
                if number not in have:
                    bad.append(f"§{number} at {_where(rel, text, m.start())}")
    assert not bad, "sections docs/RULES.md does not have:\n" + "\n".join(bad)


def test_every_named_section_of_the_design_and_the_readme_exists() -> None:
    """"ARCHITECTURE.md, Recovery", "API.md SettleRound", "README, Security": the named part is there."""
    docs = {"ARCHITECTURE.md": ROOT / "docs" / "ARCHITECTURE.md", "API.md": ROOT / "docs" / "API.md",
            "README": ROOT / "README.md", "README.md": ROOT / "README.md"}
    bad = []
    for rel, text in texts():
        for m in NAMED.finditer(text):
            doc, sep, phrase = m.groups()
            phrase = phrase.strip().strip('"').strip()
            if not phrase or (sep.strip() != "," and not phrase[0].isupper()):
                continue  # prose after the name ("as API.md says"), not a section
            phrase = re.sub(r"\s+\d+$", "", phrase)  # "write path 2": a step of that section
            target = docs[doc].read_text(encoding="utf-8")
            if doc.startswith("README"):
                headings = [h.strip().strip("`").lower() for h in re.findall(r"^#+\s+(.*)$", target, re.M)]
                found = any(h.startswith(phrase.lower()) for h in headings)
            else:
                found = phrase.lower() in target.lower()
            if not found:
                bad.append(f"{doc}: {phrase!r} at {_where(rel, text, m.start())}")
    assert not bad, "named sections that do not exist:\n" + "\n".join(bad)


def test_every_relative_markdown_link_reaches_a_file() -> None:
    bad = []
    for rel, text in texts():
        if not rel.endswith(".md"):
            continue
        for m in LINK.finditer(text):
            target = m.group(1)
            if "://" in target:
                continue
            if not (ROOT / rel).parent.joinpath(target).resolve().is_file():
                bad.append(_where(rel, text, m.start()))
    assert not bad, "links to files that do not exist:\n" + "\n".join(bad)
