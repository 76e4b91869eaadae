"""Pure decisions: from a link's config, the state read for a request, and the request, the atomic step to
apply. No I/O here; the write path (service/engine.py) gathers the state and applies what is decided."""
