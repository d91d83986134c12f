"""``trinitylake serve``: the lakehouse as an Iceberg REST catalog (issue 35).

Any Iceberg engine (Spark, Trino, Flink, DuckDB, PyIceberg's RestCatalog) reaches the
lakehouse's tables through the REST catalog API of apache/iceberg's open-api folder,
served over the same PyIceberg catalog the driver uses
(:class:`~trinitylake_dbapi.iceberg.TrinityLakeCatalog`). It sits beside the CLI, at the
top of the layers (ARCHITECTURE.md), and calls the catalog and Iceberg layers only.

Built on Starlette (routing, requests, responses) served by uvicorn (HTTP/1.1, asyncio):
the optional extra ``server``. Importing this package needs them; nothing below it does.

Rules:

  RS1 Endpoints: config; namespaces (list, with ``parent``; create with properties;
      load; exists; drop; update properties); tables (list; create; stage-create, which
      writes nothing until the commit with AssertCreate creates the table; load; exists;
      commit with requirements; rename; drop, and purge, which drops and leaves the files
      to version expiration, iceberg P8; register; metrics reports, accepted and not
      kept). A multi-level namespace arrives with its levels joined by 0x1F and reaches
      the catalog as a tuple. Lists are not paged (no next-page-token).
  RS2 ``/v1/...`` serves the latest version, read-write. ``/v1/version-N/...`` serves
      version N read-only (a write is 403 ForbiddenException): a client gets that prefix
      from ``/v1/config?warehouse=W``, W a version number, an exported snapshot name or
      an ISO timestamp. Any other prefix is 404.
  RS3 Every answered request's response carries ``TrinityLake-Version``: the lakehouse
      version its catalog work last read or published (a commit: the version it
      published), else the version it was asked at, else the latest. Only a 401, a
      request for an unknown prefix and one at a version that does not exist (or has
      expired) carry none.
  RS4 ``POST /v1/transactions/commit`` commits all its table changes as ONE lakehouse
      version, or none (every requirement checked against the same version; on a
      conflict, a request of plain appends is replayed on the latest version, iceberg
      P4; anything else is 409 and no table changes).
  RS5 Every error is the REST error model ``{"error": {"message", "type", "code"}}``
      with a status from one table (errormodel.py); an unforeseen failure is a 500 whose
      message names an incident id found in the server's log, never a traceback.
  RS6 With a token file, a request without ``Authorization: Bearer <token>`` of that file
      is 401 (constant-time comparison). Without one the server does not start, unless
      ``--insecure-no-auth`` is given and the host is a loopback address.
  RS7 Limits: a request body over ``max_body_bytes`` (default 8 MiB) is 413, counted while
      it streams in; uvicorn's h11 parser buffers at most 16 KiB of unfinished headers
      beyond one network read (a 1 MB header: the connection is closed, and uvicorn logs
      "Invalid HTTP request received", its only answer that is not the error model); at
      most ``max_connections`` connections are served at once (503 beyond), and idle
      keep-alive connections close after 5 s.
  RS8 Catalog work runs on worker threads, never on the event loop: a slow client (a
      body trickling in, a slow reader) holds only its own connection. Concurrent
      commits are the lakehouse's to order: each is its own lakehouse transaction and a
      lost race is retried on the latest version (iceberg P3).
  RS9 Views: listing a namespace's views gives none; loading or dropping one is 404
      NoSuchViewException; creating, replacing, registering or renaming one is 406
      UnsupportedOperationException: a TrinityLake lakehouse has no views.
  RS10 ``write.metadata.delete-after-commit.enabled`` works as in process: a commit
      whose table enables it deletes, on the server, the metadata files it dropped from
      the table's metadata log, once its lakehouse version is published (iceberg
      oldmetadata OM1-OM3), and older versions that name them cannot read the table
      any more (OM4). PyIceberg's RestCatalog also deletes them itself after the
      response, with its own storage access: they are gone already (it logs a warning
      per file). A create or commit with it is never refused.
  RS11 A namespace property (create, update) whose value is JSON null is 400 naming it,
      nothing changed: a property's value is a string, and null is not the string
      "null" (table properties: PyIceberg's request model refuses null, also 400).
      Numbers and booleans are taken as their JSON text. A property *name* is always a
      string in JSON: PyIceberg's RestCatalog sends a None name as "null" (the ``json``
      module's rendering), which the server cannot tell from a name "null".
"""

from __future__ import annotations

import ipaddress
import logging
import socket
import sys
import threading
from typing import Any, Mapping, TextIO

from ..catalog import LakehouseCatalog
from .app import DEFAULT_MAX_BODY_BYTES, ENDPOINTS, VERSION_HEADER, CatalogServer, create_app
from .auth import MIN_TOKEN_LENGTH, TokenFileError, Tokens, load_tokens

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MAX_CONNECTIONS",
    "ENDPOINTS",
    "MIN_TOKEN_LENGTH",
    "VERSION_HEADER",
    "CatalogServer",
    "ServeRefused",
    "ServerThread",
    "TokenFileError",
    "Tokens",
    "create_app",
    "is_loopback",
    "load_tokens",
    "serve",
]

#: Connections served at once; uvicorn answers 503 beyond (RS7).
DEFAULT_MAX_CONNECTIONS = 256


class ServeRefused(Exception):
    """The server will not start as asked (RS6), with the reason."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` names only this machine (127.0.0.0/8, ::1, localhost)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _listening_socket(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on accepted sockets of that
    # protocol. Without it, every request after the first on a keep-alive connection
    # waited ~40 ms (the response's headers and body are two writes: Nagle's algorithm
    # held the second until the client's delayed ACK): 44 ms -> under 2 ms measured.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, port))
    sock.listen(128)  # clients that connect before the loop runs wait in the backlog
    return sock


def _uvicorn_config(app: Any, *, max_connections: int, access_log: bool) -> Any:
    import uvicorn

    return uvicorn.Config(
        app,
        log_level="info" if access_log else "warning",
        access_log=access_log,
        limit_concurrency=max_connections,
        timeout_keep_alive=5,
        h11_max_incomplete_event_size=16 * 1024,  # headers (+ at most one read of 64 KiB)
        server_header=False,
        lifespan="off",
    )


class ServerThread:
    """The server on a background thread of this process, on 127.0.0.1 and a free port
    (tests, benchmarks, embedding): ``url``, then ``stop()``. Same application and
    limits as :func:`serve`; the caller chooses the tokens (``Tokens(None)``: none)."""

    def __init__(
        self,
        lakehouse: LakehouseCatalog,
        location: str,
        tokens: Tokens,
        *,
        properties: Mapping[str, str] | None = None,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
    ) -> None:
        import uvicorn

        app = create_app(lakehouse, location, tokens, max_body_bytes=max_body_bytes, properties=properties)
        self._socket = _listening_socket("127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self._socket.getsockname()[1]}"
        self._server = uvicorn.Server(_uvicorn_config(app, max_connections=max_connections, access_log=False))
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]}, name="trinitylake-serve", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop serving (open requests finish first) and close the socket."""
        self._server.should_exit = True
        self._thread.join()
        self._socket.close()


def serve(
    location: str,
    *,
    host: str = "127.0.0.1",
    port: int = 8181,
    token_file: str | None = None,
    insecure_no_auth: bool = False,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
    storage_options: Mapping | None = None,
    create: bool = False,
    access_log: bool = False,
    out: TextIO = sys.stderr,
) -> None:
    """Serve the lakehouse at ``location`` until interrupted (SIGINT/SIGTERM).

    Prints one line ``serving <location> at http://HOST:PORT`` to ``out`` once the
    socket listens (``port=0``: a free port, the line says which). Raises ServeRefused
    (RS6) before opening anything when authentication is missing, TokenFileError for a
    bad token file, and the lakehouse's own errors when it cannot be opened."""
    import uvicorn

    if token_file is None and not insecure_no_auth:
        raise ServeRefused("a --token-file is required (or --insecure-no-auth on a loopback host)")
    if token_file is None and not is_loopback(host):
        raise ServeRefused(f"--insecure-no-auth serves only a loopback host, not {host!r}: use --token-file")
    tokens: list[str] | None = None
    if token_file is not None:
        tokens, warnings = load_tokens(token_file)
        for warning in warnings:
            print(f"WARNING: {warning}", file=out)
    lakehouse = LakehouseCatalog(location, create=create, storage_options=dict(storage_options or {}) or None)
    app = create_app(lakehouse, location, Tokens(tokens), max_body_bytes=max_body_bytes,
                     properties=None)  # fmt: skip
    sock = _listening_socket(host, port)
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    print(f"serving {location} at http://{shown}:{bound}", file=out, flush=True)
    config = _uvicorn_config(app, max_connections=max_connections, access_log=access_log)
    logging.getLogger("trinitylake.server").setLevel(logging.INFO)
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
        lakehouse.close()
