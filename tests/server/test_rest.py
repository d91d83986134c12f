"""``trinitylake serve``: the Iceberg REST catalog, driven by real clients over HTTP.

PyIceberg's RestCatalog against a server started by the tests (tests/server/conftest.py):
namespaces, tables (create, stage-create, append, scan, schema commit, rename, register,
drop, purge), a multi-table ``/v1/transactions/commit`` as one lakehouse version, the
version header, reading an older version read-only, auth, the error model, limits,
concurrent commits and a slow client. Our own SQL reads what REST clients wrote.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pyarrow as pa
import pytest
import requests
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import (
    BadRequestError,
    CommitFailedException,
    ForbiddenError,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    NoSuchTableError,
    NoSuchViewError,
    TableAlreadyExistsError,
)
from pyiceberg.table import CommitTableRequest, CommitTableResponse, TableIdentifier
from pyiceberg.table.update import update_table_metadata
from pyiceberg.types import LongType

import trinitylake_dbapi
from tests.deadlines import HANG_S
from tests.server.conftest import RestServer, server_command, server_env, start_server, write_token

VERSION = "TrinityLake-Version"


def rows(server: RestServer, sql: str) -> list[tuple]:
    """Our own SQL on the served lakehouse (another process than the server)."""
    with trinitylake_dbapi.connect(server.lake) as conn:
        cur = conn.cursor()
        cur.execute(sql)
        return cur.fetchall()


def version_of(response: Any) -> int:
    return int(response.headers[VERSION])


def test_pyiceberg_round_trip(rest: RestServer) -> None:
    cat = rest.catalog()
    cat.create_namespace("trip", {"owner": "ana", "comment": "round trip"})
    assert ("trip",) in cat.list_namespaces()
    assert cat.load_namespace_properties("trip") == {"owner": "ana", "comment": "round trip"}
    summary = cat.update_namespace_properties("trip", removals={"owner", "absent"}, updates={"k": "v"})
    assert (summary.removed, summary.updated, summary.missing) == (["owner"], ["k"], ["absent"])
    assert cat.load_namespace_properties("trip") == {"k": "v", "comment": "round trip"}

    t = cat.create_table("trip.t", schema=pa.schema([("id", pa.int64()), ("name", pa.string())]))
    t.append(pa.table({"id": [1, 2], "name": ["a", "b"]}))
    t.append(pa.table({"id": [3], "name": ["c"]}))
    assert sorted(cat.load_table("trip.t").scan().to_arrow().column("id").to_pylist()) == [1, 2, 3]
    with t.update_schema() as update:
        update.add_column("x", LongType())
    assert [f.name for f in cat.load_table("trip.t").schema().fields] == ["id", "name", "x"]
    assert rows(rest, "SELECT id, name, x FROM trip.t ORDER BY id") == [(1, "a", None), (2, "b", None), (3, "c", None)]

    cat.rename_table("trip.t", "trip.t2")
    assert cat.list_tables("trip") == [("trip", "t2")]
    assert not cat.table_exists("trip.t") and cat.table_exists("trip.t2")

    staged = cat.create_table_transaction("trip.staged", schema=pa.schema([("a", pa.int64())]))
    assert not cat.table_exists("trip.staged")  # stage-create writes nothing
    staged.append(pa.table({"a": [7]}))
    staged.commit_transaction()
    assert cat.load_table("trip.staged").scan().to_arrow().column("a").to_pylist() == [7]

    location = cat.load_table("trip.t2").metadata_location
    cat.drop_table("trip.t2")
    with pytest.raises(NoSuchTableError):
        cat.load_table("trip.t2")
    cat.register_table("trip.registered", location)
    assert cat.load_table("trip.registered").scan().to_arrow().num_rows == 3
    cat.purge_table("trip.registered")
    assert cat.list_tables("trip") == [("trip", "staged")]

    with pytest.raises(TableAlreadyExistsError):
        cat.create_table("trip.staged", schema=pa.schema([("a", pa.int64())]))
    with pytest.raises(NamespaceAlreadyExistsError):
        cat.create_namespace("trip")
    with pytest.raises(NamespaceNotEmptyError):
        cat.drop_namespace("trip")
    with pytest.raises(NoSuchNamespaceError):
        cat.create_table("nowhere.t", schema=pa.schema([("a", pa.int64())]))
    cat.drop_table("trip.staged")
    cat.drop_namespace("trip")
    with pytest.raises(NoSuchNamespaceError):
        cat.load_namespace_properties("trip")


def test_our_sql_and_rest_clients_see_each_others_rows(rest: RestServer) -> None:
    with trinitylake_dbapi.connect(rest.lake) as conn:
        cur = conn.cursor()
        cur.execute("CREATE NAMESPACE mixed")
        cur.execute("CREATE TABLE mixed.t (id BIGINT, s STRING)")
        cur.execute("INSERT INTO mixed.t VALUES (1, 'sql')")
        conn.commit()
    t = rest.catalog().load_table("mixed.t")
    assert t.scan().to_arrow().to_pylist() == [{"id": 1, "s": "sql"}]
    t.append(pa.table({"id": pa.array([2], pa.int64()), "s": ["rest"]}))
    assert rows(rest, "SELECT id, s FROM mixed.t ORDER BY id") == [(1, "sql"), (2, "rest")]


class CollectingCatalog(RestCatalog):
    """RestCatalog whose table commits, inside ``collect()``, are gathered instead of
    sent; ``commit_transaction()`` posts them together to /v1/transactions/commit (what
    Java's RESTCatalog does for a multi-table transaction; PyIceberg 0.12 has no API)."""

    collected: list[dict] | None = None

    def commit_table(self, table: Any, requirements: tuple, updates: tuple) -> CommitTableResponse:
        if self.collected is None:
            return super().commit_table(table, requirements, updates)
        identifier = table.name()
        request = CommitTableRequest(
            identifier=TableIdentifier(namespace=list(identifier[:-1]), name=identifier[-1]),
            requirements=requirements,
            updates=updates,
        )
        self.collected.append(json.loads(request.model_dump_json()))
        return CommitTableResponse(
            metadata=update_table_metadata(table.metadata, updates), metadata_location=table.metadata_location
        )


def transaction_catalog(server: RestServer) -> CollectingCatalog:
    return CollectingCatalog("tx", uri=server.url, token=server.token or "")


def test_transactions_commit_is_one_lakehouse_version(rest: RestServer) -> None:
    cat = transaction_catalog(rest)
    cat.create_namespace("txn")
    schema = pa.schema([("id", pa.int64())])
    a, b = cat.create_table("txn.a", schema=schema), cat.create_table("txn.b", schema=schema)
    before = version_of(rest.request("GET", "/v1/namespaces/txn/tables/a"))
    cat.collected = []
    a.append(pa.table({"id": pa.array([1, 2], pa.int64())}))
    b.append(pa.table({"id": pa.array([10], pa.int64())}))
    changes, cat.collected = cat.collected, None
    assert [c["identifier"]["name"] for c in changes] == ["a", "b"]
    assert rows(rest, "SELECT count(*) FROM txn.a") == [(0,)]  # nothing sent yet

    done = rest.request("POST", "/v1/transactions/commit", json={"table-changes": changes})
    assert done.status_code == 204, done.text
    after = version_of(done)
    assert after == before + 1  # both tables in ONE new version
    assert rows(rest, "SELECT count(*) FROM txn.a") == [(2,)]
    assert rows(rest, "SELECT count(*) FROM txn.b") == [(1,)]
    with trinitylake_dbapi.connect(rest.lake, version=before) as old:
        cur = old.cursor()
        cur.execute("SELECT (SELECT count(*) FROM txn.a), (SELECT count(*) FROM txn.b)")
        assert cur.fetchall() == [(0, 0)]

    # A transaction one of whose requirements fails changes no table.
    a = cat.load_table("txn.a")
    cat.collected = []
    a.append(pa.table({"id": pa.array([3], pa.int64())}))
    changes, cat.collected = cat.collected, None
    changes.append({
        "identifier": {"namespace": ["txn"], "name": "b"},
        "requirements": [{"type": "assert-table-uuid", "uuid": "00000000-0000-0000-0000-000000000000"}],
        "updates": [{"action": "set-properties", "updates": {"k": "v"}}],
    })
    refused = rest.request("POST", "/v1/transactions/commit", json={"table-changes": changes})
    assert refused.status_code == 409, refused.text
    assert refused.json()["error"]["type"] == "CommitFailedException"
    assert "b" in refused.json()["error"]["message"]
    assert rows(rest, "SELECT count(*) FROM txn.a") == [(2,)]
    assert "k" not in cat.load_table("txn.b").properties


def test_every_response_names_its_lakehouse_version(rest: RestServer) -> None:
    created = rest.request("POST", "/v1/namespaces", json={"namespace": ["versions"], "properties": {}})
    assert created.status_code == 200, created.text
    v = version_of(created)
    assert version_of(rest.request("GET", "/v1/namespaces/versions")) >= v
    assert version_of(rest.request("HEAD", "/v1/namespaces/versions")) >= v
    assert version_of(rest.request("GET", "/v1/config")) >= v
    missing = rest.request("GET", "/v1/namespaces/versions/tables/nope")
    assert missing.status_code == 404 and version_of(missing) >= v
    t = rest.request("POST", "/v1/namespaces/versions/tables",
                     json={"name": "t", "schema": {"type": "struct", "schema-id": 0, "fields": [
                         {"id": 1, "name": "a", "type": "long", "required": False}]}})
    assert t.status_code == 200, t.text
    assert version_of(t) == v + 1
    assert t.json()["metadata-location"].endswith(".metadata.json")


def test_an_older_version_is_read_only(rest: RestServer) -> None:
    cat = rest.catalog()
    cat.create_namespace("old")
    before = version_of(rest.request("GET", "/v1/namespaces/old"))
    cat.create_table("old.t", schema=pa.schema([("a", pa.int64())]))

    config = rest.request("GET", f"/v1/config?warehouse={before}")
    assert config.json()["overrides"] == {"prefix": f"version-{before}"}
    assert version_of(config) == before
    past = rest.catalog("past", warehouse=str(before))
    assert past.list_tables("old") == []
    assert version_of(rest.request("GET", f"/v1/version-{before}/namespaces/old")) == before
    with pytest.raises(NoSuchTableError):
        past.load_table("old.t")
    with pytest.raises(ForbiddenError, match="read-only"):
        past.create_namespace("later")
    with pytest.raises(ForbiddenError, match="read-only"):
        past.drop_namespace("old")
    assert rest.catalog().table_exists("old.t")

    unknown = rest.request("GET", "/v1/version-999999/namespaces")
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == 404
    assert VERSION not in unknown.headers  # no such version to name
    bad_prefix = rest.request("GET", "/v1/elsewhere/namespaces")
    assert bad_prefix.status_code == 404 and "version-N" in bad_prefix.json()["error"]["message"]
    bad_warehouse = rest.request("GET", "/v1/config?warehouse=no-such-snapshot")
    assert bad_warehouse.status_code == 400 and "no-such-snapshot" in bad_warehouse.json()["error"]["message"]


def test_views_are_listed_as_none_and_otherwise_refused(rest: RestServer) -> None:
    cat = rest.catalog()
    cat.create_namespace("views")
    assert cat.list_views("views") == []
    assert not cat.view_exists("views.v")
    with pytest.raises(NoSuchViewError):
        cat.load_view("views.v")
    created = rest.request("POST", "/v1/namespaces/views/views", json={"name": "v"})
    assert created.status_code == 406
    assert "no views" in created.json()["error"]["message"]
    assert rest.request("GET", "/v1/namespaces/nowhere/views").status_code == 404


@pytest.mark.parametrize("authorization", [
    None, "Bearer", "Bearer wrong-token-of-enough-length", "Basic dXNlcjpwYXNz", "{token}x", "Bearer {short}",
])
def test_requests_without_a_known_token_get_401(rest: RestServer, authorization: str | None) -> None:
    headers = {}
    if authorization is not None:
        assert rest.token is not None
        headers["Authorization"] = authorization.format(token=f"Bearer {rest.token}", short=rest.token[:-1])
    for method, path in [("GET", "/v1/config"), ("GET", "/v1/namespaces"), ("HEAD", "/v1/namespaces/default"),
                         ("POST", "/v1/namespaces"), ("GET", "/v1/elsewhere/anything")]:
        response = rest.request(method, path, token=None, headers=headers, json={"namespace": ["x"]})
        assert response.status_code == 401, (method, path)
        assert response.headers["WWW-Authenticate"] == "Bearer"
        if method != "HEAD":
            assert response.json()["error"] == {
                "message": "a bearer token is required (Authorization: Bearer <token>)",
                "type": "NotAuthorizedException",
                "code": 401,
            }
    with pytest.raises(Exception, match="401|NotAuthorized|Unauthorized"):
        RestCatalog("bad", uri=rest.url, token="not-the-token-at-all")


def test_errors_are_the_rest_error_model(rest: RestServer) -> None:
    cases = [
        (rest.request("POST", "/v1/namespaces", data=b"{not json", headers={"Content-Type": "application/json"}),
         400, "BadRequestException"),
        (rest.request("POST", "/v1/namespaces", json={"namespace": "flat"}), 400, "BadRequestException"),
        (rest.request("POST", "/v1/namespaces", json={"namespace": ["bad name!"]}), 400, "BadRequestException"),
        (rest.request("POST", "/v1/namespaces/default/tables", json={"name": "t", "schema": {"type": "nope"}}),
         400, "BadRequestException"),
        (rest.request("POST", "/v1/namespaces/default/tables/nope", json={"requirements": [], "updates": []}),
         404, "NoSuchTableException"),
        (rest.request("POST", "/v1/namespaces/default/properties",
                      json={"removals": ["a"], "updates": {"a": "1"}}), 422, "UnprocessableEntityException"),
        (rest.request("POST", "/v1/transactions/commit", json={"table-changes": []}), 400, "BadRequestException"),
        (rest.request("GET", "/v1/nothing/like/this/at/all"), 404, "NoSuchWarehouseException"),
        (rest.request("GET", "/v1/tables/rename"), 405, "MethodNotAllowedException"),
        (rest.request("GET", "/v2/config"), 404, "NotFoundException"),
        (rest.request("DELETE", "/v1/namespaces/no_such_ns"), 404, "NoSuchNamespaceException"),
        (rest.request("POST", "/v1/namespaces/default/register",
                      json={"name": "r", "metadata-location": "file:///nonexistent/m.metadata.json"}),
         404, "NotFoundException"),
    ]
    for response, status, kind in cases:
        assert "Traceback" not in response.text
        error = response.json()["error"]
        assert set(error) == {"message", "type", "code"}, response.text
        assert error["code"] == response.status_code and error["message"]
        if status is not None:
            assert (response.status_code, error["type"]) == (status, kind), response.text
        else:
            assert 400 <= response.status_code < 600


def test_a_table_whose_metadata_file_is_gone_is_a_500_naming_it(rest: RestServer) -> None:
    """RS5: a metadata file the lakehouse names that no longer exists (a damaged
    lakehouse: deleted by hand, or by an expiration at a grace shorter than a commit
    before maintenance E13) is a server-side fault naming the file: 500
    ServerErrorException, for a read and for a commit, nothing published; never 503
    ServiceUnavailableException, which clients retry (PyIceberg and Java back off and
    ask again for the same missing file)."""
    from trinitylake_dbapi.iceberg.catalog import TrinityLakeCatalog

    with trinitylake_dbapi.connect(rest.lake, autocommit=True) as conn:  # the server never read it
        conn.cursor().execute("CREATE NAMESPACE gone")
        conn.cursor().execute("CREATE TABLE gone.t (id BIGINT)")
    location = TrinityLakeCatalog("ours", uri=rest.lake).load_table("gone.t").metadata_location
    os.remove(location.removeprefix("file://"))
    cat = rest.catalog()
    before = version_of(rest.request("GET", "/v1/namespaces/gone/tables"))
    name = os.path.basename(location)
    responses = [
        rest.request("GET", "/v1/namespaces/gone/tables/t"),
        rest.request("POST", "/v1/namespaces/gone/tables/t", json={
            "requirements": [], "updates": [{"action": "set-properties", "updates": {"k": "v"}}],
        }),
    ]
    for response in responses:
        assert "Traceback" not in response.text
        error = response.json()["error"]
        assert (response.status_code, error["type"]) == (500, "ServerErrorException"), response.text
        assert name in error["message"], error
    assert version_of(rest.request("GET", "/v1/namespaces/gone/tables")) == before
    with pytest.raises(Exception, match=name) as raised:
        cat.load_table("gone.t")
    assert "ServiceUnavailable" not in type(raised.value).__name__


@pytest.mark.parametrize("namespace", [[], [""], ["", ""], [" "], ["a", ""], ["a", " \t"], "flat", ["a", 1], None])
def test_create_namespace_refuses_an_empty_or_blank_level_with_400(rest: RestServer, namespace: Any) -> None:
    """RS5: a namespace with no level, or an empty or blank one, is the client's mistake:
    400 BadRequestException naming it (the spec gives create-namespace no 404), which
    RestCatalog raises as BadRequestError; nothing is created."""
    before = rest.request("GET", "/v1/namespaces").json()["namespaces"]
    response = rest.request("POST", "/v1/namespaces", json={"namespace": namespace})
    error = response.json()["error"]
    assert (response.status_code, error["type"]) == (400, "BadRequestException"), response.text
    assert repr(namespace) in error["message"]
    assert rest.request("GET", "/v1/namespaces").json()["namespaces"] == before
    if isinstance(namespace, list) and namespace and all(isinstance(p, str) for p in namespace):
        with pytest.raises(BadRequestError, match="empty or blank level"):
            rest.catalog().create_namespace(tuple(namespace))


# -- what PyIceberg's behaviour suite asserts where RestCatalog cannot carry it (REST_CLIENT of
# tests/server/test_rest_pyiceberg_behaviors.py): the same behaviours, checked over plain HTTP.

NULL_CASES = [
    ("/v1/namespaces", {"namespace": ["nulls_a"], "properties": {"key": None}}, "key"),
    ("/v1/namespaces", {"namespace": ["nulls_parent", "nulls_b"], "properties": {"ok": "1", "k1": None, "k2": None}}, "k1"),
]


@pytest.mark.parametrize("path,body,named", NULL_CASES)
def test_a_null_namespace_property_is_400_and_creates_nothing(rest: RestServer, path: str, body: dict,
                                                            named: str) -> None:
    """RS11 (test_create_namespace_with_null_properties: PyIceberg's suite expects
    SQLAlchemy's IntegrityError, which RestCatalog cannot raise, iceberg P14 in process):
    a null value is 400 naming the property, at create and at update, nothing changed."""
    ns = body["namespace"]
    response = rest.request("POST", path, json=body)
    error = response.json()["error"]
    assert (response.status_code, error["type"]) == (400, "BadRequestException"), response.text
    assert named in error["message"] and "null" in error["message"]
    encoded = "%1F".join(ns)
    assert rest.request("HEAD", f"/v1/namespaces/{encoded}").status_code == 404

    assert rest.request("POST", path, json={"namespace": ns, "properties": {"kept": "yes"}}).status_code == 200
    before = version_of(rest.request("GET", f"/v1/namespaces/{encoded}"))
    update = rest.request("POST", f"/v1/namespaces/{encoded}/properties",
                          json={"removals": ["kept"], "updates": body["properties"]})
    assert update.status_code == 400 and named in update.json()["error"]["message"], update.text
    after = rest.request("GET", f"/v1/namespaces/{encoded}")
    assert after.json()["properties"] == {"kept": "yes"} and version_of(after) == before

    catalog = rest.catalog()
    with pytest.raises(BadRequestError, match=named):
        catalog.create_namespace((*ns[:-1], ns[-1] + "_client"), body["properties"])
    # A None *name* cannot reach the server as such: RestCatalog posts the properties with
    # requests' json=, whose json.dumps renders the key None as the string "null".
    catalog.create_namespace((*ns[:-1], ns[-1] + "_none_name"), {None: "value"})  # type: ignore[dict-item]
    assert catalog.load_namespace_properties((*ns[:-1], ns[-1] + "_none_name")) == {"null": "value"}


def test_a_null_table_property_is_400_and_changes_nothing(rest: RestServer) -> None:
    """RS11 for tables: PyIceberg's request models refuse a null property value (400)."""
    assert rest.request("POST", "/v1/namespaces", json={"namespace": ["nulls_t"]}).status_code == 200
    schema = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "a", "type": "long", "required": False}]}
    created = rest.request("POST", "/v1/namespaces/nulls_t/tables",
                           json={"name": "t", "schema": schema, "properties": {"k": None}})
    assert created.status_code == 400 and "k" in created.json()["error"]["message"], created.text
    assert rest.request("HEAD", "/v1/namespaces/nulls_t/tables/t").status_code == 404
    assert rest.request("POST", "/v1/namespaces/nulls_t/tables", json={"name": "t", "schema": schema}).status_code == 200
    before = rest.request("GET", "/v1/namespaces/nulls_t/tables/t")
    committed = rest.request("POST", "/v1/namespaces/nulls_t/tables/t", json={
        "requirements": [], "updates": [{"action": "set-properties", "updates": {"k": None}}]})
    assert committed.status_code == 400, committed.text
    after = rest.request("GET", "/v1/namespaces/nulls_t/tables/t")
    assert after.json()["metadata-location"] == before.json()["metadata-location"]


def test_a_table_in_a_missing_or_empty_namespace_is_refused(rest: RestServer) -> None:
    """test_create_table_without_namespace (RestCatalog refuses a one-part identifier
    itself, NoSuchIdentifierError): a namespace the path names that does not exist is 404
    NoSuchNamespaceException (RestCatalog: NoSuchNamespaceError), one with an empty level
    is 400; nothing is created."""
    schema = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "a", "type": "long", "required": False}]}
    missing = rest.request("POST", "/v1/namespaces/nowhere_at_all/tables", json={"name": "t", "schema": schema})
    assert (missing.status_code, missing.json()["error"]["type"]) == (404, "NoSuchNamespaceException"), missing.text
    assert rest.request("HEAD", "/v1/namespaces/nowhere_at_all").status_code == 404
    for namespace in ("%1F", "a%1F", "%1Fa"):
        empty = rest.request("POST", f"/v1/namespaces/{namespace}/tables", json={"name": "t", "schema": schema})
        assert (empty.status_code, empty.json()["error"]["type"]) == (400, "BadRequestException"), empty.text
    with pytest.raises(NoSuchNamespaceError):
        rest.catalog().create_table("nowhere_at_all.t", schema=pa.schema([("a", pa.int64())]))


METADATA_FILE = re.compile(r"^(\d+)-[0-9a-f-]{36}\.metadata\.json$")


def metadata_version(location: str) -> int:
    """The version number of a metadata file's name, as PyIceberg's
    MetastoreCatalog._parse_metadata_version reads it (``00001-<uuid>.metadata.json``)."""
    match = METADATA_FILE.match(location.rsplit("/", 1)[-1])
    assert match, location
    return int(match.group(1))


def test_a_commit_numbers_the_next_metadata_file_and_logs_the_previous(rest: RestServer) -> None:
    """test_commit_table (it calls MetastoreCatalog._parse_metadata_version, which
    RestCatalog has not): over plain HTTP, a created table's metadata file is version 0,
    a schema commit writes version 1 with the new schema current and the old metadata
    file, with its last-updated-ms, as the only metadata-log entry."""
    assert rest.request("POST", "/v1/namespaces", json={"namespace": ["numbered"]}).status_code == 200
    fields = [{"id": 1, "name": "a", "type": "long", "required": False}]
    created = rest.request("POST", "/v1/namespaces/numbered/tables",
                           json={"name": "t", "schema": {"type": "struct", "schema-id": 0, "fields": fields}})
    assert created.status_code == 200, created.text
    original, metadata = created.json()["metadata-location"], created.json()["metadata"]
    assert metadata_version(original) == 0 and metadata["current-schema-id"] == 0
    loaded = rest.request("GET", "/v1/namespaces/numbered/tables/t").json()
    assert loaded["metadata-location"] == original

    new_schema = {"type": "struct", "schema-id": 1,
                  "fields": [*fields, {"id": 2, "name": "b", "type": "int", "required": False}]}
    committed = rest.request("POST", "/v1/namespaces/numbered/tables/t", json={
        "requirements": [{"type": "assert-current-schema-id", "current-schema-id": 0}],
        "updates": [{"action": "add-schema", "schema": new_schema, "last-column-id": 2},
                    {"action": "set-current-schema", "schema-id": -1}],
    })
    assert committed.status_code == 200, committed.text
    after = committed.json()["metadata"]
    assert metadata_version(committed.json()["metadata-location"]) == 1
    assert after["current-schema-id"] == 1 and len(after["schemas"]) == 2
    assert [f["name"] for f in after["schemas"][1]["fields"]] == ["a", "b"]
    assert after["last-updated-ms"] > metadata["last-updated-ms"]
    assert after["metadata-log"] == [{"metadata-file": original, "timestamp-ms": metadata["last-updated-ms"]}]
    stale = rest.request("POST", "/v1/namespaces/numbered/tables/t", json={
        "requirements": [{"type": "assert-current-schema-id", "current-schema-id": 0}],
        "updates": [{"action": "set-properties", "updates": {"k": "v"}}],
    })
    assert (stale.status_code, stale.json()["error"]["type"]) == (409, "CommitFailedException"), stale.text


DELETE_AFTER_COMMIT = "write.metadata.delete-after-commit.enabled"


@pytest.mark.parametrize("value", ["true", "TRUE", "1", "yes", "on"])
def test_metadata_delete_after_commit_through_rest(rest: RestServer, value: str) -> None:
    """RS10: a table created with delete-after-commit, or given it by a commit, deletes
    the metadata files each commit drops from its log, on the server, once the version is
    published (iceberg.oldmetadata OM1-OM2); an older version that names one cannot read
    the table there any more, and says so (OM4); a table without it keeps every file."""
    catalog = rest.catalog()
    ns = f"dac_{value.encode().hex()}"
    catalog.create_namespace(ns)
    schema = pa.schema([("id", pa.int64())])
    created = catalog.create_table(f"{ns}.created", schema=schema, properties={DELETE_AFTER_COMMIT: value,
                                                                              "write.metadata.previous-versions-max": "1"})
    first = created.metadata_location
    created.append(pa.table({"id": [0]}, schema=schema))
    assert os.path.exists(first.removeprefix("file://"))  # still in the log
    created.append(pa.table({"id": [1]}, schema=schema))
    assert not os.path.exists(first.removeprefix("file://"))

    table = catalog.create_table(f"{ns}.t", schema=schema, properties={"write.metadata.previous-versions-max": "1"})
    for i in range(3):
        table.append(pa.table({"id": [i]}, schema=schema))
    files = [entry.metadata_file for entry in table.metadata.metadata_log] + [table.metadata_location]
    assert all(os.path.exists(f.removeprefix("file://")) for f in files)  # without it: all kept
    old = version_of(rest.request("GET", f"/v1/namespaces/{ns}/tables/t"))
    with table.transaction() as transaction:
        transaction.set_properties({DELETE_AFTER_COMMIT: value})
    table.append(pa.table({"id": [3]}, schema=schema))
    assert not any(os.path.exists(f.removeprefix("file://")) for f in files)
    assert sorted(catalog.load_table(f"{ns}.t").scan().to_arrow()["id"].to_pylist()) == [0, 1, 2, 3]
    at_old = rest.request("GET", f"/v1/version-{old}/namespaces/{ns}/tables/t")
    assert at_old.status_code >= 400, at_old.text
    message = at_old.json()["error"]["message"]
    assert f"table {ns}.t that lakehouse version {old} names does not exist" in message, message
    assert files[-1] in message


def test_write_metadata_path_inside_the_root_through_rest(rest: RestServer, tmp_path: Any) -> None:
    """iceberg.tables M6 through the server: a write.metadata.path inside the lakehouse
    root holds the metadata files RestCatalog's commits write; one outside the root, in
    its reserved area or under another scheme is 400 naming it, nothing created."""
    catalog = rest.catalog()
    catalog.create_namespace("mpath")
    schema = pa.schema([("id", pa.int64())])
    lake = rest.lake.removeprefix("file://").rstrip("/")
    custom = f"file://{lake}/shared/meta"
    table = catalog.create_table("mpath.t", schema=schema, properties={"write.metadata.path": custom})
    table.append(pa.table({"id": [1, 2]}, schema=schema))
    assert table.metadata_location.startswith(custom + "/")
    assert all(m.manifest_path.startswith(custom + "/") for m in table.current_snapshot().manifests(table.io))
    assert rows(rest, "SELECT count(*) FROM mpath.t") == [(2,)]
    for bad in (f"file://{tmp_path}/outside", f"file://{lake}/shared/../../outside", f"file://{lake}/_meta",
                "s3://bucket/meta"):
        with pytest.raises(BadRequestError, match="cannot hold its metadata files"):
            catalog.create_table("mpath.bad", schema=schema, properties={"write.metadata.path": bad})
        assert not catalog.table_exists("mpath.bad")
        with pytest.raises(BadRequestError, match="cannot hold its metadata files"):
            with table.transaction() as transaction:
                transaction.set_properties({"write.metadata.path": bad})
    assert not (tmp_path / "outside").exists()
    assert rows(rest, "SELECT count(*) FROM mpath.t") == [(2,)]


def test_request_bodies_are_limited(rest: RestServer) -> None:
    big = b'{"namespace": ["x"], "properties": {"k": "' + b"v" * (9 * 1024 * 1024) + b'"}}'
    response = rest.request("POST", "/v1/namespaces", data=big, headers={"Content-Type": "application/json"})
    assert response.status_code == 413
    assert response.json()["error"]["type"] == "RequestTooLargeException"

    def chunks() -> Any:  # no Content-Length: the limit holds while the body streams in
        for _ in range(10):
            yield b"x" * (1024 * 1024)

    streamed = rest.request("POST", "/v1/namespaces", data=chunks(), headers={"Content-Type": "application/json"})
    assert streamed.status_code == 413
    assert not rest.catalog().namespace_exists("x")

    try:  # a 1 MB header: uvicorn closes the connection (or answers 4xx), and serves on
        huge = rest.request("GET", "/v1/config", headers={"X-Padding": "a" * 1_000_000})
        assert 400 <= huge.status_code < 500
    except requests.RequestException:  # reset while the response was read
        pass
    assert rest.request("GET", "/v1/config").status_code == 200


def test_concurrent_appends_from_many_clients_all_land(rest: RestServer) -> None:
    rest.catalog().create_namespace("busy")
    schema = pa.schema([("writer", pa.int64()), ("n", pa.int64())])
    rest.catalog().create_table("busy.one", schema=schema)
    for w in range(4):
        rest.catalog().create_table(f"busy.own{w}", schema=schema)

    def writer(w: int) -> None:
        cat = rest.catalog(f"w{w}")
        shared, own = cat.load_table("busy.one"), cat.load_table(f"busy.own{w}")
        for n in range(3):
            batch = pa.table({"writer": pa.array([w], pa.int64()), "n": pa.array([n], pa.int64())})
            shared.append(batch)
            own.append(batch)

    with ThreadPoolExecutor(4) as pool:
        for future in [pool.submit(writer, w) for w in range(4)]:
            future.result(timeout=HANG_S)
    assert sorted(rows(rest, "SELECT writer, n FROM busy.one")) == [(w, n) for w in range(4) for n in range(3)]
    for w in range(4):
        assert rows(rest, f"SELECT count(*) FROM busy.own{w}") == [(3,)]


@pytest.mark.slow  # client processes (~3.0 s of CPU): the full run only
def test_a_slow_client_blocks_no_one(rest: RestServer) -> None:
    host, port = rest.url.removeprefix("http://").rsplit(":", 1)
    slow = socket.create_connection((host, int(port)), timeout=HANG_S)
    try:  # a request whose body never finishes arriving
        slow.sendall(
            b"POST /v1/namespaces HTTP/1.1\r\nHost: x\r\n"
            + f"Authorization: Bearer {rest.token}\r\n".encode()
            + b"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"namespace\": "
        )
        idle = socket.create_connection((host, int(port)), timeout=HANG_S)  # sends nothing
        done = threading.Event()
        results: list[int] = []

        def others() -> None:
            for _ in range(5):
                results.append(rest.request("GET", "/v1/namespaces").status_code)
            results.append(rest.request("POST", "/v1/namespaces", json={"namespace": ["fast"]}).status_code)
            done.set()

        threading.Thread(target=others, daemon=True).start()
        assert done.wait(HANG_S)
        assert results == [200] * 6
        idle.close()
    finally:
        slow.close()
    # A client that leaves in the middle of its body is no error of the server's: nothing
    # in its log (100 such clients once filled a pipe with tracebacks and stopped it).
    marker = rest.request("GET", "/v1/namespaces/slow-client-left")  # after the close, on the same loop
    assert marker.status_code == 404
    assert "ClientDisconnect" not in "".join(rest.log)


def run_serve(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(server_command(*args), env=server_env(), capture_output=True, text=True, timeout=HANG_S)


@pytest.mark.slow  # starts `trinitylake serve` processes (~8 s of CPU): the full run only
def test_the_server_refuses_to_start_without_authentication(tmp_path: Any) -> None:
    lake = str(tmp_path / "lake")
    trinitylake_dbapi.connect(lake, create=True).close()
    refused = run_serve(lake)
    assert refused.returncode == 2
    assert "--token-file is required" in refused.stderr and "Traceback" not in refused.stderr
    exposed = run_serve(lake, "--insecure-no-auth", "--host", "0.0.0.0")
    assert exposed.returncode == 2 and "loopback" in exposed.stderr
    (tmp_path / "short").write_text("abc\n")
    short = run_serve(lake, "--token-file", str(tmp_path / "short"))
    assert short.returncode == 2 and "line 1" in short.stderr and "abc" not in short.stderr
    (tmp_path / "empty").write_text("# nothing\n\n")
    empty = run_serve(lake, "--token-file", str(tmp_path / "empty"))
    assert empty.returncode == 2 and "holds no token" in empty.stderr
    missing = run_serve(str(tmp_path / "no-lake"), "--token-file", write_token(tmp_path)[1])
    assert missing.returncode == 2 and "Traceback" not in missing.stderr

    open_server = start_server(lake, "--insecure-no-auth")
    try:
        assert open_server.request("GET", "/v1/namespaces", token=None).json() == {"namespaces": [["default"]]}
    finally:
        open_server.stop()
    assert open_server.process.returncode == 0


@pytest.mark.slow  # a second server process (~4.5 s of CPU): the full run only
def test_concurrent_transactions_and_two_servers_on_one_lakehouse(rest: RestServer) -> None:
    """Transactions of plain appends to the same two tables, posted at once from 4
    threads to two server processes on the same lakehouse: every one lands, each as one
    version holding both of its tables' appends (the lakehouse orders them: a loser is
    replayed on the latest version, iceberg P4)."""
    second = start_server(rest.lake, "--token-file", _token_file_of(rest), token=rest.token)
    try:
        cat = transaction_catalog(rest)
        cat.create_namespace("manytx")
        schema = pa.schema([("writer", pa.int64())])
        cat.create_table("manytx.a", schema=schema)
        cat.create_table("manytx.b", schema=schema)

        def transaction(w: int) -> int:
            server = rest if w % 2 == 0 else second
            mine = transaction_catalog(server)
            a, b = mine.load_table("manytx.a"), mine.load_table("manytx.b")
            mine.collected = []
            batch = pa.table({"writer": pa.array([w], pa.int64())})
            a.append(batch)
            b.append(batch)
            done = server.request("POST", "/v1/transactions/commit", json={"table-changes": mine.collected})
            assert done.status_code == 204, done.text
            return version_of(done)

        with ThreadPoolExecutor(4) as pool:
            versions = [f.result(timeout=HANG_S) for f in [pool.submit(transaction, w) for w in range(4)]]
        assert len(set(versions)) == 4  # four versions, one per transaction
        for table in ("a", "b"):
            assert sorted(rows(rest, f"SELECT writer FROM manytx.{table}")) == [(w,) for w in range(4)]
        for w, version in enumerate(versions):  # each version has both appends of its writer
            with trinitylake_dbapi.connect(rest.lake, version=version) as at:
                cur = at.cursor()
                cur.execute(f"SELECT (SELECT count(*) FROM manytx.a WHERE writer = {w}),"
                            f" (SELECT count(*) FROM manytx.b WHERE writer = {w})")
                assert cur.fetchall() == [(1, 1)]
            with trinitylake_dbapi.connect(rest.lake, version=version - 1) as before:
                cur = before.cursor()
                cur.execute(f"SELECT (SELECT count(*) FROM manytx.a WHERE writer = {w}),"
                            f" (SELECT count(*) FROM manytx.b WHERE writer = {w})")
                assert cur.fetchall() == [(0, 0)]
    finally:
        second.stop()


def _token_file_of(server: RestServer) -> str:
    """The token file the module's server was started with (its command line)."""
    args = server.process.args
    return str(args[args.index("--token-file") + 1])
