"""The canonical digests a laboratory recomputes on its own (docs/SERVICE.md, "Software identity and field
verification"): the distribution's SHA-256 over its sorted (path, sha256) list, and the seeded HMAC-SHA256 over the
files."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class FileDigest:
    """One file of the distribution: its path (POSIX, relative, as the record names it) and its SHA-256 (hex)."""

    path: str
    sha256: str


def sha256_hex(data: bytes) -> str:
    """The SHA-256 of `data`, lower-case hex."""
    return hashlib.sha256(data).hexdigest()


def manifest(files: Iterable[FileDigest]) -> bytes:
    """The files as `sha256sum` prints them, "<sha256>  <path>\\n", sorted by path (code point order, which is
    UTF-8 byte order): what `LC_ALL=C sort -k2` makes of `sha256sum` run over the same files."""
    lines = sorted(files, key=lambda f: f.path)
    for f in lines:
        if "\n" in f.path or "\r" in f.path:
            raise ValueError(f"a path with a line break cannot be in the manifest: {f.path!r}")
    return "".join(f"{f.sha256}  {f.path}\n" for f in lines).encode()


def distribution_sha256(files: Iterable[FileDigest]) -> str:
    """One SHA-256 over the whole distribution: the SHA-256 of its manifest."""
    return sha256_hex(manifest(files))


def parse_seed(text: str) -> bytes:
    """A challenge's seed from hex (whitespace between bytes allowed); ValueError when it is not hex or empty."""
    try:
        seed = bytes.fromhex(text)
    except ValueError:
        raise ValueError(f"--seed {text!r}: not hexadecimal (two hex digits a byte, e.g. 00ff1a)") from None
    if not seed:
        raise ValueError(f"--seed {text!r}: empty: a challenge needs at least one byte")
    return seed


def seeded_hmac(seed: bytes, contents: Iterable[tuple[str, bytes]]) -> str:
    """HMAC-SHA256 keyed with `seed` over every file in path order, each fed as its UTF-8 path, a LF, its length
    in bytes in decimal, a LF, then its bytes: the whole content, so no stored answer can stand in for the files."""
    mac = hmac.new(seed, digestmod=hashlib.sha256)
    for path, data in sorted(contents, key=lambda c: c[0]):
        mac.update(path.encode() + b"\n" + str(len(data)).encode() + b"\n")
        mac.update(data)
    return mac.hexdigest()
