"""The Iceberg REST catalog API over the lakehouse, as a Starlette application (RS1-RS11).

Each request is read (its body bounded, RS7) on the event loop, then its catalog work
runs on a worker thread (RS8) against :class:`~trinitylake_dbapi.iceberg.TrinityLakeCatalog`
bound to a :class:`~trinitylake_dbapi.server.scope.RequestScope`, and the response carries
the lakehouse version the work read or published (RS3).
"""

from __future__ import annotations

import json
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Mapping

from pyiceberg.catalog.rest import CreateTableRequest, RegisterTableRequest, TableResponse
from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError, NoSuchViewError
from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC
from pyiceberg.table import CommitTableRequest
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER
from pyiceberg.table.update import AssertCreate
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from ..catalog import LakehouseCatalog
from ..iceberg import TrinityLakeCatalog
from .auth import Tokens
from .errormodel import RequestError, error_body, error_for
from .scope import RequestScope

__all__ = [
    "CATALOG_NAME",
    "DEFAULT_MAX_BODY_BYTES",
    "ENDPOINTS",
    "VERSION_HEADER",
    "CatalogServer",
    "create_app",
]

#: The response header naming the lakehouse version a response reflects (RS3).
VERSION_HEADER = "TrinityLake-Version"
#: Requests with a larger body are refused with 413 (RS7).
DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024
CATALOG_NAME = "trinitylake"
#: How many read-only catalogs at older versions are kept open (RS2).
PINNED_CATALOGS = 16
_VERSION_PREFIX = re.compile(r"version-([0-9]{1,18})")
#: First path segments after /v1 that are routes, not a prefix (RS2).
_UNPREFIXED = frozenset({"config", "namespaces", "tables", "transactions", "oauth"})
_NAMESPACE_SEPARATOR = "\x1f"

#: What /v1/config announces (RS9): views are listed (as none) and looked up (none is
#: found); creating, replacing, renaming or dropping one is refused.
ENDPOINTS = [
    "GET /v1/{prefix}/namespaces",
    "POST /v1/{prefix}/namespaces",
    "GET /v1/{prefix}/namespaces/{namespace}",
    "HEAD /v1/{prefix}/namespaces/{namespace}",
    "DELETE /v1/{prefix}/namespaces/{namespace}",
    "POST /v1/{prefix}/namespaces/{namespace}/properties",
    "GET /v1/{prefix}/namespaces/{namespace}/tables",
    "POST /v1/{prefix}/namespaces/{namespace}/tables",
    "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "POST /v1/{prefix}/namespaces/{namespace}/register",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/metrics",
    "POST /v1/{prefix}/tables/rename",
    "POST /v1/{prefix}/transactions/commit",
    "GET /v1/{prefix}/namespaces/{namespace}/views",
    "GET /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "HEAD /v1/{prefix}/namespaces/{namespace}/views/{view}",
]

_NO_VIEWS = "a TrinityLake lakehouse has no views"


class _CommitTarget:
    """The table a commit request names. ``TrinityLakeCatalog.commit_table`` reads the
    table's state itself, in the commit's own lakehouse transaction; of the table
    object it uses the identifier (and its FileIO, None here: the catalog's own)."""

    io = None

    def __init__(self, identifier: tuple[str, ...]) -> None:
        self._identifier = identifier

    def name(self) -> tuple[str, ...]:
        return self._identifier


@dataclass
class Call:
    """One request's inputs, as the catalog work sees them."""

    catalog: TrinityLakeCatalog
    scope: RequestScope
    server: "CatalogServer"
    params: Mapping[str, str]
    query: Mapping[str, str]
    body: Any = None
    version: int | None = None
    extra: dict = field(default_factory=dict)

    def namespace(self, text: str | None = None) -> tuple[str, ...]:
        """The namespace of the path (or ``text``): levels joined by 0x1F (RS1)."""
        raw = self.params["namespace"] if text is None else text
        parts = tuple(raw.split(_NAMESPACE_SEPARATOR))
        if not all(parts):
            raise RequestError(400, "BadRequestException", f"namespace {raw!r}: an empty level")
        return parts

    def table(self, key: str = "table") -> tuple[str, ...]:
        return (*self.namespace(), self.params[key])


Work = Callable[[Call], "tuple[int, bytes | None]"]


def _json(value: Any) -> bytes:
    return json.dumps(value).encode()


def _object(body: Any, what: str) -> dict:
    if not isinstance(body, dict):
        raise RequestError(400, "BadRequestException", f"{what}: the request body must be a JSON object")
    return body


def _identifier(value: Any, what: str) -> tuple[str, ...]:
    """A TableIdentifier JSON object ({"namespace": [...], "name": ...}) as a tuple."""
    if (
        not isinstance(value, dict)
        or not isinstance(value.get("name"), str)
        or not isinstance(value.get("namespace"), list)
        or not all(isinstance(p, str) and p for p in value["namespace"])
        or not value["namespace"]
    ):
        raise RequestError(400, "BadRequestException", f"{what}: expected {{'namespace': [...], 'name': ...}}")
    return (*value["namespace"], value["name"])


def _strings(value: Any, what: str) -> dict[str, str]:
    """RS11: a JSON object of properties as strings; a null value is 400 naming it."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise RequestError(400, "BadRequestException", f"{what}: expected an object of strings")
    nulls = sorted(str(k) for k, v in value.items() if v is None)
    if nulls:
        raise RequestError(400, "BadRequestException",
                           f"{what}: {nulls} have the value null: a property's value is a string")
    return {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in value.items()}


def _table_response(metadata_location: str | None, metadata: Any) -> bytes:
    return TableResponse(metadata_location=metadata_location or None, metadata=metadata).model_dump_json().encode()


# -- the work of each endpoint (on a worker thread) ------------------------------------------


def get_config(call: Call) -> tuple[int, bytes | None]:
    """RS2: ``warehouse`` empty, ``latest`` or the lakehouse location: the latest version,
    read-write; a version number, snapshot name or timestamp: read-only there, by the
    prefix ``version-N`` the overrides give."""
    warehouse = (call.query.get("warehouse") or "").strip()
    overrides: dict[str, str] = {}
    if warehouse and warehouse != "latest" and warehouse.rstrip("/") != call.server.location.rstrip("/"):
        try:
            version = call.server.lakehouse.resolve_version_text(warehouse)
        except Exception as e:  # noqa: BLE001 - reported as the client's mistake below
            raise RequestError(
                400,
                "BadRequestException",
                f"warehouse {warehouse!r}: not a version number, exported snapshot name or "
                f"timestamp of this lakehouse ({e}); leave it empty for the latest version",
            ) from None
        overrides["prefix"] = f"version-{version}"
        call.extra["version"] = version
    return 200, _json({"defaults": {}, "overrides": overrides, "endpoints": ENDPOINTS})


def list_namespaces(call: Call) -> tuple[int, bytes | None]:
    parent = call.query.get("parent")
    parts = call.namespace(parent) if parent else ()
    found = call.catalog.list_namespaces(parts)
    return 200, _json({"namespaces": [list(n) for n in found]})


def create_namespace(call: Call) -> tuple[int, bytes | None]:
    body = _object(call.body, "create namespace")
    namespace = body.get("namespace")
    if not isinstance(namespace, list) or not namespace or not all(isinstance(p, str) for p in namespace):
        raise RequestError(400, "BadRequestException",
                           f"create namespace: 'namespace' must be a non-empty list of names, not {namespace!r}")
    if not all(p.strip() for p in namespace):
        # 400, not the catalog's NoSuchNamespaceError (404): the spec gives create no 404 (RS5)
        raise RequestError(400, "BadRequestException",
                           f"create namespace: {namespace!r} has an empty or blank level")
    properties = _strings(body.get("properties"), "create namespace: 'properties'")
    call.catalog.create_namespace(tuple(namespace), properties)
    return 200, _json({"namespace": namespace, "properties": properties})


def load_namespace(call: Call) -> tuple[int, bytes | None]:
    namespace = call.namespace()
    properties = call.catalog.load_namespace_properties(namespace)
    return 200, _json({"namespace": list(namespace), "properties": dict(properties)})


def namespace_exists(call: Call) -> tuple[int, bytes | None]:
    namespace = call.namespace()
    if not call.catalog.namespace_exists(namespace):
        raise NoSuchNamespaceError(f"Namespace does not exist: {'.'.join(namespace)}")
    return 204, None


def drop_namespace(call: Call) -> tuple[int, bytes | None]:
    call.catalog.drop_namespace(call.namespace())
    return 204, None


def update_namespace_properties(call: Call) -> tuple[int, bytes | None]:
    body = _object(call.body, "update namespace properties")
    removals = body.get("removals") or []
    if not isinstance(removals, list) or not all(isinstance(k, str) for k in removals):
        raise RequestError(400, "BadRequestException", "'removals' must be a list of property names")
    updates = _strings(body.get("updates"), "'updates'")
    overlap = sorted(set(removals) & set(updates))
    if overlap:
        raise RequestError(
            422, "UnprocessableEntityException", f"properties {overlap} are both removed and updated"
        )
    summary = call.catalog.update_namespace_properties(call.namespace(), set(removals), updates)
    return 200, _json({"updated": summary.updated, "removed": summary.removed, "missing": summary.missing})


def list_tables(call: Call) -> tuple[int, bytes | None]:
    found = call.catalog.list_tables(call.namespace())
    return 200, _json({"identifiers": [{"namespace": list(t[:-1]), "name": t[-1]} for t in found]})


def create_table(call: Call) -> tuple[int, bytes | None]:
    body = dict(_object(call.body, "create table"))
    for optional in ("location", "partition-spec", "write-order"):  # optional in the spec
        body.setdefault(optional, None)
    request = CreateTableRequest.model_validate(body)
    identifier = (*call.namespace(), request.name)
    spec = request.partition_spec or UNPARTITIONED_PARTITION_SPEC
    order = request.write_order or UNSORTED_SORT_ORDER
    if request.stage_create:  # RS1: nothing is written until the commit that creates it
        if not call.catalog.namespace_exists(identifier[:-1]):
            raise NoSuchNamespaceError(f"Namespace does not exist: {'.'.join(identifier[:-1])}")
        if call.catalog.table_exists(identifier):
            raise RequestError(409, "AlreadyExistsException", f"Table already exists: {'.'.join(identifier)}")
        staged = call.catalog.create_table_transaction(
            identifier, request.table_schema, request.location, spec, order, request.properties
        )
        return 200, _table_response(None, staged.table_metadata)
    table = call.catalog.create_table(identifier, request.table_schema, request.location, spec, order, request.properties)
    return 200, _table_response(table.metadata_location, table.metadata)


def load_table(call: Call) -> tuple[int, bytes | None]:
    table = call.catalog.load_table(call.table())
    return 200, _table_response(table.metadata_location, table.metadata)


def table_exists(call: Call) -> tuple[int, bytes | None]:
    identifier = call.table()
    if not call.catalog.table_exists(identifier):
        raise NoSuchTableError(f"Table does not exist: {'.'.join(identifier)}")
    return 204, None


def drop_table(call: Call) -> tuple[int, bytes | None]:
    identifier = call.table()
    if call.query.get("purgeRequested", "false").lower() == "true":
        call.catalog.purge_table(identifier)
    else:
        call.catalog.drop_table(identifier)
    return 204, None


def _commit_request(body: Any, identifier: tuple[str, ...] | None) -> CommitTableRequest:
    body = dict(_object(body, "commit"))
    if identifier is not None:
        named = body.setdefault("identifier", {"namespace": list(identifier[:-1]), "name": identifier[-1]})
        if _identifier(named, "commit: 'identifier'") != identifier:
            raise RequestError(400, "BadRequestException", "commit: the body's identifier is not the path's table")
    elif "identifier" not in body:
        raise RequestError(400, "BadRequestException", "transaction: every table change names its 'identifier'")
    return CommitTableRequest.model_validate(body)


def _commit(call: Call, request: CommitTableRequest) -> Any:
    identifier = (*request.identifier.namespace.root, request.identifier.name)
    creates = any(isinstance(r, AssertCreate) for r in request.requirements)
    if not creates and not call.catalog.table_exists(identifier):  # else the catalog would create it
        raise NoSuchTableError(f"Table does not exist: {'.'.join(identifier)}")
    target = _CommitTarget(identifier)
    return call.catalog.commit_table(target, tuple(request.requirements), tuple(request.updates))  # type: ignore[arg-type]


def commit_table(call: Call) -> tuple[int, bytes | None]:
    response = _commit(call, _commit_request(call.body, call.table()))
    return 200, response.model_dump_json().encode()


def commit_transaction(call: Call) -> tuple[int, bytes | None]:
    """RS4: every table change of the request in one lakehouse version, or none."""
    body = _object(call.body, "transaction")
    changes = body.get("table-changes")
    if not isinstance(changes, list) or not changes:
        raise RequestError(400, "BadRequestException", "transaction: 'table-changes' must be a non-empty list")
    requests = [_commit_request(change, None) for change in changes]
    if call.catalog.read_only:  # refused before anything is staged
        raise RequestError(403, "ForbiddenException", f"lakehouse version {call.version} is read-only")
    with call.scope.block():
        for request in requests:
            _commit(call, request)
    return 204, None


def rename_table(call: Call) -> tuple[int, bytes | None]:
    body = _object(call.body, "rename table")
    source = _identifier(body.get("source"), "rename: 'source'")
    destination = _identifier(body.get("destination"), "rename: 'destination'")
    call.catalog.rename_table(source, destination)
    return 204, None


def register_table(call: Call) -> tuple[int, bytes | None]:
    body = dict(_object(call.body, "register table"))
    body.setdefault("overwrite", False)
    request = RegisterTableRequest.model_validate(body)
    if request.overwrite:
        raise RequestError(406, "UnsupportedOperationException", "register table: 'overwrite' is not supported")
    table = call.catalog.register_table((*call.namespace(), request.name), request.metadata_location)
    return 200, _table_response(table.metadata_location, table.metadata)


def report_metrics(call: Call) -> tuple[int, bytes | None]:
    """Scan and commit reports are accepted and not kept."""
    call.table()
    return 204, None


def list_views(call: Call) -> tuple[int, bytes | None]:
    namespace = call.namespace()
    if not call.catalog.namespace_exists(namespace):
        raise NoSuchNamespaceError(f"Namespace does not exist: {'.'.join(namespace)}")
    return 200, _json({"identifiers": []})


def no_such_view(call: Call) -> tuple[int, bytes | None]:
    raise NoSuchViewError(f"View does not exist: {'.'.join(call.table('view'))} ({_NO_VIEWS})")


def views_refused(call: Call) -> tuple[int, bytes | None]:
    raise RequestError(406, "UnsupportedOperationException", f"views are not supported: {_NO_VIEWS}")


#: path -> {method: (work, reads a body, is a commit)}
_ROUTES: dict[str, dict[str, tuple[Work, bool, bool]]] = {
    "/v1/config": {"GET": (get_config, False, False)},
    "/v1/namespaces": {
        "GET": (list_namespaces, False, False),
        "POST": (create_namespace, True, False),
    },
    "/v1/namespaces/{namespace}": {
        "GET": (load_namespace, False, False),
        "HEAD": (namespace_exists, False, False),
        "DELETE": (drop_namespace, False, False),
    },
    "/v1/namespaces/{namespace}/properties": {"POST": (update_namespace_properties, True, False)},
    "/v1/namespaces/{namespace}/tables": {
        "GET": (list_tables, False, False),
        "POST": (create_table, True, False),
    },
    "/v1/namespaces/{namespace}/tables/{table}": {
        "GET": (load_table, False, False),
        "HEAD": (table_exists, False, False),
        "POST": (commit_table, True, True),
        "DELETE": (drop_table, False, False),
    },
    "/v1/namespaces/{namespace}/tables/{table}/metrics": {"POST": (report_metrics, True, False)},
    "/v1/namespaces/{namespace}/register": {"POST": (register_table, True, False)},
    "/v1/tables/rename": {"POST": (rename_table, True, False)},
    "/v1/transactions/commit": {"POST": (commit_transaction, True, True)},
    "/v1/namespaces/{namespace}/views": {
        "GET": (list_views, False, False),
        "POST": (views_refused, True, False),
    },
    "/v1/namespaces/{namespace}/views/{view}": {
        "GET": (no_such_view, False, False),
        "HEAD": (no_such_view, False, False),
        "POST": (views_refused, True, False),
        "DELETE": (no_such_view, False, False),
    },
    "/v1/namespaces/{namespace}/register-view": {"POST": (views_refused, True, False)},
    "/v1/views/rename": {"POST": (views_refused, True, False)},
}


class CatalogServer:
    """The lakehouse as the REST endpoints see it: the catalog at the latest version
    (read-write) and read-only ones at older versions (RS2), and the work of one request
    on a worker thread, answered with the version header (RS3) or an error (RS5)."""

    def __init__(self, lakehouse: LakehouseCatalog, location: str, *, properties: Mapping[str, str] | None = None) -> None:
        self.lakehouse = lakehouse
        self.location = location
        self._properties = dict(properties or {})
        self.scope = RequestScope(lakehouse)
        self.catalog = TrinityLakeCatalog.bound(CATALOG_NAME, lakehouse, self.scope, **self._properties)
        self._pinned: OrderedDict[int, tuple[TrinityLakeCatalog, RequestScope]] = OrderedDict()
        self._lock = threading.Lock()

    def at(self, version: int | None) -> tuple[TrinityLakeCatalog, RequestScope]:
        """The catalog (and its scope) of requests at ``version`` (None: the latest)."""
        if version is None:
            return self.catalog, self.scope
        with self._lock:
            found = self._pinned.get(version)
            if found is not None:
                self._pinned.move_to_end(version)
                return found
        scope = RequestScope(self.lakehouse, version)
        catalog = TrinityLakeCatalog.bound(
            CATALOG_NAME, self.lakehouse, scope, read_only=True, tables=self.catalog.tables, **self._properties
        )
        with self._lock:
            self._pinned[version] = (catalog, scope)
            while len(self._pinned) > PINNED_CATALOGS:
                self._pinned.popitem(last=False)
        return catalog, scope

    def respond(
        self,
        work: Work,
        version: int | None,
        params: Mapping[str, str],
        query: Mapping[str, str],
        body: Any,
        failure: BaseException | None,
        *,
        committing: bool,
        head: bool,
    ) -> Response:
        """Run ``work`` (blocking: on a worker thread) and build its response."""
        if version is not None:
            try:
                self.lakehouse.resolve_version(version)
            except Exception as e:  # noqa: BLE001 - an expired or unknown version: 404, no header (RS3)
                status, kind, message = error_for(e)
                content = None if head else error_body(status, kind, message)
                return Response(content, status_code=status, media_type="application/json" if content else None)
        catalog, scope = self.at(version)
        scope.start_request()
        call = Call(catalog, scope, self, params, query, body, version)
        try:
            if failure is not None:
                raise failure
            status, content = work(call)
        except Exception as e:  # noqa: BLE001 - every error becomes the REST error model (RS5)
            status, kind, message = error_for(e, committing=committing)
            content = error_body(status, kind, message)
        seen = scope.seen()
        if seen is None:
            seen = call.extra.get("version", version)
        if seen is None:
            try:
                seen = self.lakehouse.latest_version()
            except Exception:  # noqa: BLE001 - the header is left out when storage fails
                seen = None
        headers = {} if seen is None else {VERSION_HEADER: str(seen)}
        if head or content is None:
            return Response(status_code=status, headers=headers)
        return Response(content, status_code=status, headers=headers, media_type="application/json")


async def _read_body(request: Request, limit: int) -> Any:
    """The request's JSON body, at most ``limit`` bytes (RS7: 413 beyond, 400 if not JSON)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise RequestError(413, "RequestTooLargeException", f"request body of {declared} bytes: the limit is {limit}")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise RequestError(413, "RequestTooLargeException", f"request body over {limit} bytes")
        chunks.append(chunk)
    data = b"".join(chunks)
    if not data:
        return None
    try:
        return json.loads(data)
    except (ValueError, UnicodeDecodeError) as e:
        raise RequestError(400, "BadRequestException", f"the request body is not JSON: {e}") from None


def _endpoint(server: CatalogServer, methods: dict[str, tuple[Work, bool, bool]], limit: int) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        work, reads_body, committing = methods[request.method]
        version = request.scope.get("state", {}).get("lakehouse_version")
        body, failure = None, None
        if reads_body:
            try:
                body = await _read_body(request, limit)
            except RequestError as e:
                failure = e
            except ClientDisconnect:  # the client left mid-body: no one to answer, no error of ours
                return Response(status_code=499)
        return await run_in_threadpool(
            server.respond,
            work,
            version,
            dict(request.path_params),
            dict(request.query_params),
            body,
            failure,
            committing=committing,
            head=request.method == "HEAD",
        )

    return endpoint


class _Gate:
    """RS6 and RS2 before routing: a request without a known bearer token gets 401; a
    path ``/v1/version-N/...`` is routed as ``/v1/...`` at version N, read-only."""

    def __init__(self, app: ASGIApp, tokens: Tokens) -> None:
        self.app = app
        self.tokens = tokens

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        if not self.tokens.accepts(headers.get("authorization")):
            response = Response(
                error_body(401, "NotAuthorizedException", "a bearer token is required (Authorization: Bearer <token>)"),
                status_code=401,
                headers={"WWW-Authenticate": "Bearer"},
                media_type="application/json",
            )
            await response(scope, receive, send)
            return
        path: str = scope["path"]
        if "//" in path:  # a base URI with a trailing slash
            path = re.sub("/{2,}", "/", path)
            scope = {**scope, "path": path}
        parts = path.split("/")
        if len(parts) > 3 and parts[1] == "v1" and parts[2] not in _UNPREFIXED:
            match = _VERSION_PREFIX.fullmatch(parts[2])
            if match is None:
                response = Response(
                    error_body(
                        404,
                        "NoSuchWarehouseException",
                        f"prefix {parts[2]!r}: this server knows the prefixes version-N that /v1/config gives",
                    ),
                    status_code=404,
                    media_type="application/json",
                )
                await response(scope, receive, send)
                return
            scope = dict(scope)
            scope["path"] = "/v1/" + "/".join(parts[3:])
            scope["state"] = {**scope.get("state", {}), "lakehouse_version": int(match.group(1))}
        await self.app(scope, receive, send)


async def _not_found(request: Request, exc: Exception) -> Response:
    status = exc.status_code if isinstance(exc, HTTPException) else 404
    kind = "MethodNotAllowedException" if status == 405 else "NotFoundException"
    message = f"{request.method} {request.url.path}: " + (
        "not supported on this path" if status == 405 else "no such endpoint of the Iceberg REST catalog API"
    )
    return Response(error_body(status, kind, message), status_code=status, media_type="application/json")


async def _internal_error(request: Request, exc: Exception) -> Response:
    status, kind, message = error_for(exc)
    return Response(error_body(status, kind, message), status_code=status, media_type="application/json")


def create_app(
    lakehouse: LakehouseCatalog,
    location: str,
    tokens: Tokens,
    *,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    properties: Mapping[str, str] | None = None,
) -> ASGIApp:
    """The ASGI application serving ``lakehouse`` (opened from ``location``)."""
    server = CatalogServer(lakehouse, location, properties=properties)
    routes = [
        Route(path, _endpoint(server, methods, max_body_bytes), methods=list(methods))
        for path, methods in _ROUTES.items()
    ]
    app = Starlette(
        routes=routes, exception_handlers={404: _not_found, 405: _not_found, Exception: _internal_error}
    )
    app.state.catalog_server = server
    return _Gate(app, tokens)
