"""The chaos harness of issue 23: network namespaces, a fault proxy, a seeded fault schedule and a history checker.

`make chaos` runs a short seeded schedule; docs/OPERATIONS.md, "Chaos runs", says how to read and replay one.
"""
