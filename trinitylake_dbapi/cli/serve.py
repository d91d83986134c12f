"""``trinitylake serve LAKE``: the lakehouse as an Iceberg REST catalog (server/).

Usage::

    trinitylake serve LOCATION [--host 127.0.0.1] [--port 8181] [--token-file PATH]
                               [--insecure-no-auth] [--max-body-bytes N]
                               [--max-connections N] [--storage-option KEY=VALUE ...]
                               [--create] [--access-log]

Exit status 2, with one line on standard error and no traceback, when the server cannot
start: no token file and no ``--insecure-no-auth`` (or that flag on a non-loopback host),
a bad token file, a lakehouse that cannot be opened, a port in use, or the ``server``
extra (Starlette, uvicorn) not installed.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Callable, Sequence

from trinitylake_dbapi import errors

__all__ = ["serve_command"]


def serve_command(argv: Sequence[str], storage_option: Callable[[str], tuple[str, Any]]) -> int:
    """Parse ``argv`` (after ``serve``) and serve until interrupted; the exit status."""
    parser = argparse.ArgumentParser(
        prog="trinitylake serve",
        description="Serve a lakehouse as an Iceberg REST catalog (docs/rest.md).",
    )
    parser.add_argument("location", help="the lakehouse location")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8181, help="port (default 8181; 0: a free one)")
    parser.add_argument("--token-file", metavar="PATH",
                        help="bearer tokens, one per line; requests without one are refused (401)")
    parser.add_argument("--insecure-no-auth", action="store_true",
                        help="serve without authentication (loopback hosts only)")
    parser.add_argument("--max-body-bytes", type=int, default=None,
                        help="largest request body accepted (default 8 MiB; 413 beyond)")
    parser.add_argument("--max-connections", type=int, default=None,
                        help="connections served at once (default 256; 503 beyond)")
    parser.add_argument("--storage-option", metavar="KEY=VALUE", type=storage_option,
                        action="append", default=[], help="fsspec storage option (repeatable)")
    parser.add_argument("--create", action="store_true", help="create the lakehouse if missing")
    parser.add_argument("--access-log", action="store_true", help="log every request")
    args = parser.parse_args(list(argv))
    try:
        from trinitylake_dbapi import server
    except ImportError as e:
        print(f"ERROR: trinitylake serve needs the 'server' extra "
              f"(pip install 'trinitylake-dbapi[server]'): {e}", file=sys.stderr)
        return 2
    limits = {}
    if args.max_body_bytes is not None:
        limits["max_body_bytes"] = args.max_body_bytes
    if args.max_connections is not None:
        limits["max_connections"] = args.max_connections
    try:
        server.serve(
            args.location,
            host=args.host,
            port=args.port,
            token_file=args.token_file,
            insecure_no_auth=args.insecure_no_auth,
            storage_options=dict(args.storage_option) or None,
            create=args.create,
            access_log=args.access_log,
            **limits,
        )
    except (server.ServeRefused, server.TokenFileError) as e:
        print(f"ERROR: {e}", file=sys.stderr)
        return 2
    except errors.Error as e:
        print(f"ERROR: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # the address in use, not available
        print(f"ERROR: cannot listen on {args.host}:{args.port}: {e.strerror or e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 0
    return 0
