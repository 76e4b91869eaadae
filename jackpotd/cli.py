"""`jackpotd`: serve the jackpot network, migrate the ledger, recover, audit, and look at pools."""

from __future__ import annotations

import argparse
import logging
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import urlsplit

from . import admin_commands
from .auth.credentials import add_credential_flags
from .host_commands import DEFAULT_ROLES
from .settings import NAMES, Settings, SettingsError, load
from .software import commands as software_commands
from .target import add_target_flag

EPILOG = """With neither --redis-url nor --postgres-dsn, jackpotd starts embedded PostgreSQL and Valkey
servers under --state-dir and stops them when it exits. Settings may also come from JACKPOTD_* variables
(JACKPOTD_<KEY>, e.g. JACKPOTD_REDIS_URL, JACKPOTD_LISTEN, JACKPOTD_STATE_DIR) or a TOML file (--config); flags win
over the environment, which wins over the file."""


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", help="TOML file of settings, any of these keys (each also JACKPOTD_<KEY> in the "
                                    f"environment): {', '.join(NAMES)}")
    p.add_argument("--redis-url", help="Redis or Valkey URL, e.g. redis://10.0.0.5:6379/0 (no password: "
                                       "--redis-password-file)")
    p.add_argument("--postgres-dsn", help="PostgreSQL DSN, e.g. postgresql://jackpotd_app@db/jackpot (no password: "
                                          "--postgres-password-file)")
    p.add_argument("--redis-password-file", help="file holding the Redis password (secrets never on the command "
                                                 "line)")
    p.add_argument("--redis-cluster", action="store_const", const=True,
                   help="--redis-url names a node of a Valkey/Redis Cluster: each link lives on its hash tag's shard "
                        "(JACKPOTD_REDIS_CLUSTER=true)")
    p.add_argument("--postgres-password-file", help="file holding the PostgreSQL role's password")
    p.add_argument("--state-dir", help="where embedded servers keep their data (default ./state)")
    p.add_argument("--log-level", help="DEBUG, INFO, WARNING (default INFO)")
    p.add_argument("--checkpoint-key-file", help="the HMAC key of the hash chain's checkpoints, a file the database "
                                                 "never sees: serve writes the checkpoints with it, audit checks "
                                                 "them (default with embedded stores: STATE_DIR/secrets/"
                                                 "checkpoint.key, made on first start; docs/DECISIONS.md, Hash chain)")
    p.add_argument("--checkpoint-dir", help="where the checkpoints are kept (default STATE_DIR/checkpoints; "
                                            "production: a volume of another host that keeps what is appended)")


def _api(s: argparse.ArgumentParser) -> None:
    """The flags of a process that serves the gRPC API."""
    s.add_argument("--listen", help="host:port to listen on (default 127.0.0.1:50051); one jackpotd per port on a "
                                    "host, whatever the host part: a second exits 2 naming the first")
    s.add_argument("--metrics-port", type=int, help="Prometheus metrics port on loopback (default 9464; 0: off)")
    s.add_argument("--metrics-host", help="address /metrics listens on (default 127.0.0.1; 0.0.0.0 in a container "
                                          "for a Prometheus beside it)")
    s.add_argument("--workers", type=int, help="gRPC worker processes (default 1; 0 serves in the supervisor)")
    s.add_argument("--tls-cert-file", help="the server's TLS certificate (PEM); with --tls-key-file and "
                                           "--tls-ca-file the service serves TLS and every caller presents a client "
                                           "certificate signed by that CA (see `jackpotd certs`)")
    s.add_argument("--tls-key-file", help="the server certificate's private key (PEM)")
    s.add_argument("--tls-ca-file", help="the CA that signs client certificates (tables and roles)")
    s.add_argument("--auth-key-file", help="the key that signs bearer tokens (default with embedded stores: "
                                           "STATE_DIR/credentials/auth.key, issued on first start)")


def _writing(s: argparse.ArgumentParser) -> None:
    """The flags of a process that may write the ledger."""
    s.add_argument("--group-commit-ms", type=float,
                   help="under load, how long the ledger writer gathers entries into one commit (default 5)")
    s.add_argument("--retention-seconds", type=int,
                   help="how long Redis keeps settled or voided rounds and answered request records after the "
                        "ledger has them; later retries are answered from PostgreSQL (default 60)")


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="jackpotd", description=__doc__, epilog=EPILOG,
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    s = sub.add_parser("serve", help="run the whole service: the gRPC API and the ledger writer", epilog=EPILOG,
                       description="Migrate; take this process's share of the ledger writer's shard leases (alone: "
                                   "all of them; then recover their links and write the ledger); serve TableService, "
                                   "DisplayService, AdminService, ReportService, health and reflection until Ctrl-C. "
                                   "One jackpotd per state directory: a second start on it exits 2 (embedded "
                                   "stores; `grpc` and `writer` likewise), and one per listen port on a host. "
                                   "Embedded stores keep the ports recorded in STATE_DIR/ports.json.")
    _common(s)
    _api(s)
    s.add_argument("--demo", action="store_true", help="load the demo link: one split link, six tables")
    _writing(s)
    g = sub.add_parser("grpc", help="run API replicas only (stateless; a `jackpotd writer` writes the ledger)",
                       epilog=EPILOG, description="Serve the gRPC API without a ledger writer: run as many as "
                                                  "you need behind a load balancer, and one or more `jackpotd "
                                                  "writer` beside them.")
    _common(g)
    _api(g)
    w = sub.add_parser("writer", help="run the ledger writer of this process's share of the writer shards",
                       epilog=EPILOG, description="The links are divided into 16 writer shards, each with a lease "
                                                  "(a PostgreSQL advisory lock). Take a fair share of the leases "
                                                  "(all of them alone, half with two writers...), recover those "
                                                  "shards' links and write their ledger; take a dead writer's "
                                                  "shards over within a second. Run two or more.")
    _common(w)
    w.add_argument("--metrics-port", type=int, help="Prometheus metrics port on loopback (default 9464; 0: off)")
    w.add_argument("--metrics-host", help="address /metrics listens on (default 127.0.0.1)")
    _writing(w)
    m = sub.add_parser("migrate", help="apply pending ledger schema migrations", description="Apply pending "
                       "PostgreSQL migrations (also done on every start).")
    _common(m)
    r = sub.add_parser("recover", help="make Redis and the ledger agree for every link",
                       description="Redis ahead: drain its journal into PostgreSQL. Redis behind or empty: "
                                   "rebuild it from PostgreSQL.")
    _common(r)
    a = sub.add_parser("audit", help="recompute every balance from the ledger and check Redis and the chain",
                       description="Exit status 0 when every link's ledger sums, chains and matches Redis. With "
                                   "embedded stores and jackpotd stopped, Redis is not compared (the embedded "
                                   "Valkey keeps nothing while jackpotd is stopped; it is rebuilt from the ledger "
                                   "at start): the ledger, its chain and its anchors are checked.")
    _common(a)
    a.add_argument("--checkpoints", metavar="DIR", help="check the chain against the checkpoints in DIR (default "
                                                        "checkpoint_dir, STATE_DIR/checkpoints, when a checkpoint key "
                                                        "is set; embedded stores: STATE_DIR/secrets/checkpoint.key)")
    b = sub.add_parser("rebuild-summaries", help="derive finance's summaries again from the ledger's entries",
                       description="Finance's per-quarter-hour summaries (docs/CLIENTS.md, Finance) are written "
                                   "with the entries; the audit and VerifyLedger say when they differ from what the "
                                   "entries make them. This derives them again, as the ledger's owner, one link at a "
                                   "time (its writer waits meanwhile).")
    _common(b)
    b.add_argument("--link", action="append", help="a link to rebuild (repeat for more; default every link)")
    f = sub.add_parser("fenced", help="list links stopped until an operator acts, and why",
                       description="Each fenced link: the ledger refused one of its entries, or the ledger was "
                                   "truncated or rewritten outside jackpotd (checked again here against the anchors "
                                   "kept outside the database), and what to do. Exit status 1 when any link is "
                                   "fenced. OPERATIONS.md, 'A fenced link' and 'A fenced link after tampering'.")
    _common(f)
    u = sub.add_parser("unfence", help="lift a link's fence: an operator's act, with a reason, in the audit trail",
                       description="Lift a link's fence once its cause is resolved. The act and its reason are "
                                   "recorded in the audit trail with the host's account. A link fenced for a refused "
                                   "entry: the ledger writer tries it again (--discard: the link is rebuilt from the "
                                   "ledger first, dropping the entries the ledger never took; none was answered). A "
                                   "link fenced for tampering is lifted only when its ledger is again the one the "
                                   "anchors back: restored from a backup, or with --restore its removed entries put "
                                   "back from Redis's journal; or, with --accept, the ledger is accepted as it is "
                                   "(removed sequence numbers are recorded as lost entries, never reused, and the "
                                   "acceptance is signed into the anchors). Exit status 1 when the link stays fenced.")
    _common(u)
    u.add_argument("link", help="the fenced link's id")
    u.add_argument("--reason", required=True, help="why the fence may be lifted (recorded in the audit trail)")
    how = u.add_mutually_exclusive_group()
    how.add_argument("--discard", action="store_true", help="drop the entries the ledger refused (rebuild Redis "
                                                            "from the ledger)")
    how.add_argument("--restore", action="store_true", help="a truncated ledger: put the removed entries back from "
                                                            "Redis's journal (kept only if they make the anchored "
                                                            "head exactly)")
    how.add_argument("--accept", action="store_true", help="a tampered ledger: accept it as it is, recording removed "
                                                           "sequence numbers as lost entries")
    v = sub.add_parser("revoke", help="revoke a token or a certificate before it expires (or --list them)",
                       description="Put a credential on the revocation list: every jackpotd worker refuses it within "
                                   "a few seconds and ends its open streams (WatchMeter, WatchPools) with "
                                   "UNAUTHENTICATED. A revocation is never taken back: issue a new credential "
                                   "(`jackpotd certs`). The act and its reason go to the audit trail.")
    _common(v)
    which = v.add_mutually_exclusive_group(required=True)
    which.add_argument("--token-file", help="revoke the bearer token in this file (by its jti)")
    which.add_argument("--jti", help="revoke the bearer token with this id")
    which.add_argument("--cert", metavar="PEM", help="revoke this client certificate (by its serial number)")
    which.add_argument("--serial", help="revoke the client certificate with this serial number (hex)")
    which.add_argument("--list", action="store_true", help="list the revoked credentials")
    v.add_argument("--reason", help="why (required to revoke; recorded in the audit trail)")
    p = sub.add_parser("pools", help="show a link's pools through the gRPC API",
                       description="Ask a running jackpotd for a link's pools (DisplayService.GetPools). By "
                                   "default it presents a display token minted with $JACKPOTD_AUTH_KEY_FILE when "
                                   "that is set, else a token from CREDENTIALS/tokens (display, finance, "
                                   "supervisor or admin, in that order) or one minted with CREDENTIALS/auth.key.")
    p.add_argument("--link", default="demo", help="link id (default demo)")
    add_target_flag(p)
    add_credential_flags(p)
    admin_commands.add_parsers(sub)
    software_commands.add_parsers(sub)
    sub.add_parser("system-account", help="create the system account the embedded PostgreSQL runs as under root",
                   description="As root, jackpotd runs its embedded PostgreSQL as a system account of its own, "
                               "jackpotd-pg, which no other process shares (a package's install step: `make run` and "
                               "`make test` call it). Creates it (no home, no login shell) when it is missing; "
                               "changes nothing when it exists. Not root: nothing to do, the server runs as you.")
    c = sub.add_parser("certs", help="issue a development CA, server, table and role certificates and tokens",
                       description=CERTS_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    c.add_argument("--out", required=True, metavar="DIR", help="the credentials directory (created 0700)")
    c.add_argument("--tables", metavar="T1,T2", help="table ids to issue client certificates for")
    c.add_argument("--roles", metavar="ROLE:NAME,...",
                   help=f"role credentials (a certificate and a token each); default on a new directory: "
                        f"{DEFAULT_ROLES}; ROLE is one of admin, supervisor, display, finance, console (a console acts "
                        "for supervisors)")
    c.add_argument("--hosts", metavar="H1,H2", help="more names or addresses for the server certificate (it always "
                                                    "has localhost, 127.0.0.1 and ::1); issues it again")
    c.add_argument("--server", action="store_true", help="issue the server certificate again (it is issued when "
                                                         "missing or when --hosts is given)")
    c.add_argument("--table-tokens", action="store_true",
                   help="also a token for each table (tokens/table-<id>.token); only a plain-text listener on "
                        "loopback accepts a table's token: for development and tests")
    c.add_argument("--days", type=int, default=365, help="validity of the certificates issued (default 365; the "
                                                         "CA: 3650)")
    c.add_argument("--token-days", type=int, default=30, help="validity of the tokens issued (default 30)")
    return top


CERTS_HELP = """Issue credentials into DIR with a certificate authority of its own (EC P-256). An existing CA
(ca.pem, ca.key) and auth key in DIR are reused, so later runs add tables and roles under the same CA and
the tokens already issued stay valid. Keys and tokens are written 0600, directories 0700.

  DIR/ca.pem, ca.key                   the CA: the server's tls_ca_file, and every client's --ca
  DIR/server.pem, server.key           tls_cert_file and tls_key_file (localhost, 127.0.0.1, ::1, --hosts)
  DIR/tables/<id>.pem, <id>.key        a table's client certificate: URI urn:jackpot:table:<id>, CN <id>
  DIR/roles/<role>-<name>.pem, .key    a role's client certificate: URI urn:jackpot:<role>:<name>
  DIR/auth.key                         the token signing key: the server's auth_key_file
  DIR/tokens/<role>-<name>.token       a bearer token (HS256 JWT) for the role, signed with auth.key
  DIR/tokens/table-<id>.token          with --table-tokens: a table's token (plain-text loopback only)

Serve TLS with them:
  jackpotd serve --listen 0.0.0.0:50051 --tls-cert-file DIR/server.pem --tls-key-file DIR/server.key \\
                 --tls-ca-file DIR/ca.pem --auth-key-file DIR/auth.key
On TLS every caller presents a client certificate signed by the CA (tables their table certificate, people
and devices their role certificate); bearer tokens are for the plain-text listener on loopback."""


def settings_of(args: argparse.Namespace) -> Settings:
    for name in ("redis_url", "postgres_dsn"):  # secrets never on the command line: any user sees it (ps, /proc)
        value = getattr(args, name, None)
        if value and _carries_password(value):
            store = name.split("_")[0]
            raise SettingsError(f"--{name.replace('_', '-')} carries a password, which every user of this host can "
                                f"read on the command line: put the password in a file given by --{store}-password-"
                                f"file (or $JACKPOTD_{store.upper()}_PASSWORD_FILE), or give the whole "
                                f"{'URL' if store == 'redis' else 'DSN'} in $JACKPOTD_{name.upper()} or the "
                                "--config file")
    settings = load(getattr(args, "config", None),
                    **{name: getattr(args, name, None) for name in Settings.model_fields})
    for name in ("redis_password_file", "postgres_password_file", "redis_sentinel_password_file"):
        path = getattr(settings, name)
        if path and not os.access(path, os.R_OK):
            raise SettingsError(f"{name} = {path!r}: cannot read it")
    return settings


def _carries_password(url: str) -> bool:
    """Whether a URL or DSN holds a password (user:password@, ?password=, or key=value's password=)."""
    try:
        in_netloc = urlsplit(url).password is not None
    except ValueError:
        in_netloc = False
    return in_netloc or re.search(r"(^|[?&\s])password\s*=", url) is not None


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.command in ("fund", "update-link"):
        from . import admin_commands

        return admin_commands.run(args)
    if args.command in ("version", "verify-install"):
        return software_commands.run(args)
    if args.command in ("pools", "certs", "system-account"):
        from . import host_commands

        return host_commands.run(args)
    try:
        settings = settings_of(args)
    except SettingsError as e:
        print(f"jackpotd: {e}", file=sys.stderr)
        return 2
    if args.command in ("serve", "grpc", "writer") and settings.embedded:  # the state directory holds the stores
        from .state_lock import StateDirBusy, hold

        try:
            hold(settings.state_dir)
        except (StateDirBusy, OSError) as e:
            print(f"jackpotd: {e}", file=sys.stderr)
            return 2
    logging.basicConfig(level=settings.log_level, stream=sys.stderr,
                        format="%(asctime)s %(levelname)-7s %(name)s: %(message)s")
    metrics_dir = None
    if (args.command in ("serve", "grpc") and settings.workers > 0 and settings.metrics_port > 0
            and not os.environ.get("PROMETHEUS_MULTIPROC_DIR")):
        # Worker processes count requests, latency and hits: prometheus-client's multiprocess mode puts
        # every process's metrics in files the supervisor's /metrics adds up. It must be chosen before
        # prometheus_client is first imported (by .app), and workers inherit it.
        root = Path(settings.state_dir).resolve() / "metrics"
        for old in root.glob("*"):  # left by a killed jackpotd
            if old.name.isdigit() and not Path(f"/proc/{old.name}").exists():
                shutil.rmtree(old, ignore_errors=True)
        metrics_dir = root / str(os.getpid())
        shutil.rmtree(metrics_dir, ignore_errors=True)
        try:
            metrics_dir.mkdir(parents=True)
        except OSError:  # a read-only state directory: anywhere private will do
            metrics_dir = Path(tempfile.mkdtemp(prefix="jackpotd-metrics-"))
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(metrics_dir)
    try:
        from .api.transport import ListenRefused
        from .app import run_loop, tune_gc
        from .auth.issue import IssueError
        from .embedded.account import AccountMissing
        from .listen_lock import ListenBusy

        try:
            tune_gc()
            result: int = run_loop(_run(args, settings))
        except (ListenRefused, ListenBusy, IssueError, SettingsError, AccountMissing) as e:  # the listen address
            # is refused or another jackpotd's, TLS files, credentials or what the stores turn out to be cannot be
            # used, or the server's account is missing
            print(f"jackpotd: {e}", file=sys.stderr)
            return 2
    finally:
        if metrics_dir is not None:
            shutil.rmtree(metrics_dir, ignore_errors=True)
    return result


async def _run(args: argparse.Namespace, settings: Settings) -> int:
    from . import app, ledger_commands
    from . import stores as store_wiring

    if args.command in ("serve", "grpc", "writer"):
        role = {"serve": app.ALL, "grpc": app.GRPC, "writer": app.WRITER}[args.command]
        await app.serve(settings, demo=getattr(args, "demo", False), role=role)
        return 0
    settings = app.with_default_anchor_key(settings, create=False)  # embedded: make run's anchors
    async with store_wiring.open_stores(settings) as stores:
        if args.command == "migrate":
            print("schema is up to date")  # open_stores migrated
            return 0
        if args.command == "recover":
            return await ledger_commands.recover(stores, settings)
        if args.command == "rebuild-summaries":
            from tqdm import tqdm

            from .service.errors import Unavailable
            from .store.ledger import summaries

            def progress(links: list[str]) -> Iterable[str]:
                return tqdm(links, desc="links", unit="link", disable=len(links) < 2 or None, file=sys.stderr)

            def done(link: str, entries: int, rows: int) -> None:
                print(f"{link}: {entries} entries, {rows} summary rows" if entries else f"{link}: no such link")

            try:
                await summaries.rebuild_links(stores.owner_dsn or stores.dsn, args.link or [], done, progress)
            except Unavailable as e:
                print(f"jackpotd: the summaries could not be derived again: {e} (it runs as the ledger's owner)",
                      file=sys.stderr)
                return 1
            return 0
        if args.command == "revoke":
            from . import credential_commands

            return await credential_commands.run(stores, args)
        if args.command == "fenced":
            return await ledger_commands.fenced(stores, settings)
        if args.command == "unfence":
            return await ledger_commands.lift(stores, settings, args)
        return await ledger_commands.audit(stores, settings, args)


if __name__ == "__main__":
    sys.exit(main())
