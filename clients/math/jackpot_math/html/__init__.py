"""The certificate's self-contained HTML page: the page (`page`), its first screen (`glance`), its tables
(`tables`) and its style sheet (`style`)."""

from .page import render_html

__all__ = ["render_html"]
