"""Refusals of the caller, not of the request (API.md, Errors)."""

from __future__ import annotations


class Unauthenticated(Exception):
    """No credential, or one that is expired, malformed or not signed by us (gRPC UNAUTHENTICATED)."""


class PermissionDenied(Exception):
    """A valid credential outside its role, or a table acting for another (gRPC PERMISSION_DENIED)."""
