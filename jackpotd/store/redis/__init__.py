"""The Redis adapter (service.ports.LiveStore and what the writer needs): `pools` puts it together from its
connections (`connection`), journals and probes (`journal`), announcements (`announcements`), the writers'
heartbeats (`health`), rebuilds and fences (`rebuild`) and the Lua scripts beside it (`scripts`: apply.lua,
read.lua); `errors` leaves every Redis failure as the service's Unavailable, and `cutoff` decides what a leader
cut off from its Redis does."""
