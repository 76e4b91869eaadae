"""Debian's headless Chromium for the browser tests, driven by Playwright (never a browser Playwright downloads)."""

from __future__ import annotations

import os

import pytest

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def require_chromium() -> None:
    """Skip the calling test module when chromium is missing and this is not root; as root it is an error, since
    `make test` installs it then."""
    if os.path.exists(CHROMIUM):
        return
    if os.geteuid() == 0:  # `make test` installs it as root: missing here means the setup is broken
        raise RuntimeError(f"{CHROMIUM} is missing: `make test` installs Debian's chromium (apt-get install "
                           "chromium); run it, or install the package")
    pytest.skip(f"{CHROMIUM} is missing and this is not root: install Debian's chromium package (`make test` "
                "does as root) to run the browser tests", allow_module_level=True)
