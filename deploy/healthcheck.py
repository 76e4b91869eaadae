#!/usr/bin/env python3
"""jackpotd-healthcheck: ask a jackpotd's grpc.health.v1 over mTLS; exit 0 when SERVING, 1 otherwise.

jackpotd's TLS listener requires a client certificate from every caller (docs/SECURITY.md), and Kubernetes'
built-in `grpc` probe cannot present one, so probes run this instead (it is in the image at
/usr/local/bin/jackpotd-healthcheck). Without --ca it speaks plain text (a loopback listener).

  jackpotd-healthcheck --target 127.0.0.1:50051 --ca /etc/jackpotd/tls/ca.pem \
      --cert /etc/jackpotd/probe/tls.crt --key /etc/jackpotd/probe/tls.key [--service link:demo]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="jackpotd-healthcheck", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--target", default="127.0.0.1:50051")
    p.add_argument("--service", default="", help='health service name ("" is the whole service)')
    p.add_argument("--ca", help="the CA that signed the server's certificate (TLS)")
    p.add_argument("--cert", help="a client certificate signed by jackpotd's tls_ca_file")
    p.add_argument("--key", help="that certificate's private key")
    p.add_argument("--server-name", help="the name to expect in the server's certificate (default: the target's)")
    p.add_argument("--timeout", type=float, default=2.0)
    args = p.parse_args(argv)

    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    if args.ca:
        creds = grpc.ssl_channel_credentials(Path(args.ca).read_bytes(),
                                             Path(args.key).read_bytes() if args.key else None,
                                             Path(args.cert).read_bytes() if args.cert else None)
        options = [("grpc.ssl_target_name_override", args.server_name)] if args.server_name else []
        channel = grpc.secure_channel(args.target, creds, options=options)
    else:
        channel = grpc.insecure_channel(args.target)
    with channel:
        try:
            resp = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=args.service),
                                                             timeout=args.timeout)
        except grpc.RpcError as e:
            print(f"jackpotd-healthcheck: {e.code().name}: {e.details()}", file=sys.stderr)
            return 1
    status = health_pb2.HealthCheckResponse.ServingStatus.Name(resp.status)
    print(status)
    return 0 if resp.status == health_pb2.HealthCheckResponse.SERVING else 1


if __name__ == "__main__":
    sys.exit(main())
