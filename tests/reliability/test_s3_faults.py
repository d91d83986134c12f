"""S3 errors injected in the moto server (timeouts, 500, 503 SlowDown, 409 conflicts):
retried where safe, reported clearly where not (issue 9, point 2).

Transient faults (each failing request succeeds when retried) must be invisible: every
commit, race, read and expiration works. Persistent faults from the k-th request of a
commit on, for every k, must leave the lakehouse at the old version or the new one, and
the caller must be told the truth: success exactly when the new version exists, and
when a lost reply makes that unknowable, an error that says so.

botocore runs its own retry logic (``standard`` mode, as configured below); only its
backoff delay is shortened so the test runs in seconds.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from reliability_helpers import SMALL_TREE, columns, state
from s3_faults import Fault, every_other, faults, from_request, in_bucket
from trinitylake_dbapi import lakehouse
from trinitylake_dbapi.catalog import LakehouseCatalog
from trinitylake_dbapi.errors import Error, SerializationError, StorageError
from trinitylake_dbapi.storage import Storage
from trinitylake_dbapi.verify import verify
from trinitylake_dbapi import maintenance

pytestmark = pytest.mark.s3

READ_TIMEOUT_S = 1.0


@pytest.fixture(autouse=True)
def short_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    from botocore.retries.standard import ExponentialBackoff

    monkeypatch.setattr(ExponentialBackoff, "delay_amount", lambda self, context: 0.005)


def s3_storage(root: str, server: Any, *, attempts: int = 5, s3fs_retries: int = 5) -> Storage:
    """A new Storage (empty caches) over s3fs's cached filesystem for these settings.

    The filesystem is shared, as fsspec shares it between a user's catalogs: a new one
    per commit would build a new botocore session each time (0.3-0.4 s of parsing its
    JSON models), most of this module's run time. Nothing the tests check lives in it:
    the faults are injected by the server, each Storage keeps its own caches."""
    import s3fs

    options = dict(server.storage_options)
    options["skip_instance_cache"] = False
    options["config_kwargs"] = {
        "retries": {"mode": "standard", "max_attempts": attempts},
        "read_timeout": READ_TIMEOUT_S,
        "connect_timeout": READ_TIMEOUT_S,
    }
    fs = s3fs.S3FileSystem(use_listings_cache=False, **options)
    fs.retries = s3fs_retries
    return Storage(root, filesystem=fs)


def workload(root: str, server: Any) -> dict:
    """Create, commit, race (replayed and refused), read, time travel and expire."""
    first = LakehouseCatalog(root, create=True, storage=s3_storage(root, server),
                             lakehouse_options=SMALL_TREE)
    second = LakehouseCatalog(root, storage=s3_storage(root, server))
    txn = first.begin()
    txn.create_namespace("ns")
    txn.commit()
    for batch in range(3):
        txn = first.begin()
        for i in range(4):
            txn.create_table("ns", f"t{batch}{i}", columns("id"))
        txn.commit()
    a, b = first.begin(), second.begin()
    a.create_table("ns", "a", columns("id"))
    b.create_table("ns", "b", columns("id"))
    a.commit()
    b.commit()  # lost the race, replayed on a's version
    a, b = first.begin(), second.begin()
    a.add_columns("ns", "a", columns("x"))
    b.drop_table("ns", "a")
    a.commit()
    with pytest.raises(SerializationError):
        b.commit()
    assert first.begin(version=2).list_tables("ns")[:1] == [("ns", "t00")]
    maintenance.expire_versions(first, retain_last=3, older_than_millis=int(time.time() * 1000) + 1000,
                          orphan_grace_millis=10**9)
    return state(second.begin())


EXPECTED = {"default": {},
            "ns": {**{f"t{b}{i}": ["id"] for b in range(3) for i in range(4)},
                   "a": ["id", "x"], "b": ["id"]}}

MIXED = [
    Fault("InternalError", "before"),
    Fault("InternalError", "after"),
    Fault("SlowDown", "before"),
    Fault("SlowDown", "after"),
    Fault("ConditionalRequestConflict", "before"),  # only on conditional PUTs, as S3
]
TIMEOUTS = [
    Fault("InternalError", "before", READ_TIMEOUT_S + 0.3),  # the request is lost
    Fault("InternalError", "after", READ_TIMEOUT_S + 0.3),  # the reply is lost
]


def round_robin(choices: list[Fault], limit: int) -> Any:
    """Every other request fails, with the next fault kind in turn; a conditional PUT
    (a root's exclusive create) gets a 409 conflict, if that is a choice."""
    state = {"n": 0, "failed": 0, "next": 0}
    conflicts = [f for f in choices if f.code == "ConditionalRequestConflict"]
    others = [f for f in choices if f.code != "ConditionalRequestConflict"]

    def rule(request: Any) -> Fault | None:
        state["n"] += 1
        if state["n"] % 2 == 0 or state["failed"] >= limit:
            return None
        state["failed"] += 1
        if conflicts and request.method == "PUT" and request.conditional:
            return conflicts[0]
        state["next"] += 1
        return others[state["next"] % len(others)]

    return rule


@pytest.mark.parametrize("kinds, limit", [(MIXED, 30), (TIMEOUTS, 4)], ids=["errors", "timeouts"])
def test_transient_faults_are_retried_invisibly(kinds: list[Fault], limit: int,
                                                s3_server: Any) -> None:
    bucket = s3_server.create_bucket()
    root = f"s3://{bucket}/lake"
    with faults(in_bucket(bucket, round_robin(kinds, limit))) as plan:
        final = workload(root, s3_server)
    assert final == EXPECTED
    assert sum(plan.injected.values()) == limit, plan.injected
    report = verify(root, storage_options=s3_server.storage_options, all_versions=True)
    assert report.ok, report.text()
    print(f"\n{sum(plan.injected.values())} faults in {plan.requests} requests, all "
          f"retried: {dict(plan.injected)}")


def _commit_one(root: str, server: Any, name: str) -> None:
    catalog = LakehouseCatalog(root, storage=s3_storage(root, server, attempts=2, s3fs_retries=1))
    txn = catalog.begin()
    txn.create_table("ns", name, columns("id"))
    txn.add_columns("ns", "t0", columns(name))
    txn.commit()


@pytest.mark.parametrize("when", ["before", "after"])
def test_a_persistent_fault_from_every_request_of_a_commit(when: str, s3_server: Any,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    # Fault k must land on the k-th request of the same sequence every time: a commit
    # slower than FRESH_LATEST_S (a loaded host) would check the latest version again
    # before publishing (lakehouse D3) and shift the requests after it.
    monkeypatch.setattr(lakehouse, "FRESH_LATEST_S", 60.0)
    bucket = s3_server.create_bucket()
    root = f"s3://{bucket}/lake"
    checker = LakehouseCatalog(root, create=True, storage_options=s3_server.storage_options,
                               lakehouse_options=SMALL_TREE)
    txn = checker.begin()
    txn.create_namespace("ns")
    for i in range(12):
        txn.create_table("ns", f"t{i}", columns("id"))
    txn.commit()
    outcomes = {"old": 0, "new": 0, "unknown": 0}
    k = 0
    while True:
        k += 1
        old = checker.latest_version()
        error: Error | None = None
        with faults(in_bucket(bucket, from_request(k, Fault("InternalError", when)))) as plan:
            try:
                _commit_one(root, s3_server, f"c{k}")
            except Error as e:
                error = e
            requests = plan.requests
        latest = checker.latest_version()  # roots are immutable: same version, same state
        assert latest in (old, old + 1), (k, old, latest)
        if error is not None:
            assert isinstance(error, StorageError), repr(error)
            assert "s3://" in str(error) and " failed" in str(error), str(error)
        if latest == old:
            assert error is not None, k  # never "success" without the new version
            outcomes["old"] += 1
        elif error is None:
            outcomes["new"] += 1
        else:  # committed, but the reply was lost and could not be checked
            assert when == "after", (k, str(error))
            assert "outcome is unknown" in str(error), str(error)
            outcomes["unknown"] += 1
        done = error is None and requests < k
        if done or k % 4 == 0:
            report = verify(checker.storage)
            assert report.ok, report.text()
        if done:
            break
        assert k < 200
    assert state(checker.begin())["ns"]["t0"][0] == "id"
    print(f"\npersistent faults ({when}) from each of {k - 1} requests: {outcomes}")
    assert outcomes["old"] > 0 and outcomes["new"] > 0
    if when == "after":
        assert outcomes["unknown"] > 0


def test_the_conditional_put_probe_survives_a_lost_reply(s3_server: Any) -> None:
    """The one-time probe of If-None-Match support: its first PUT lands but the reply is
    lost; botocore retries and gets 412 for the probe's own object. That is support,
    not a refusal (the bug: Storage refused to work on a store that supports it)."""
    bucket = s3_server.create_bucket()
    root = f"s3://{bucket}/lake"
    storage = s3_storage(root, s3_server)
    rule = every_other(Fault("InternalError", "after"), only=lambda r: r.conditional, limit=1)
    with faults(in_bucket(bucket, rule)) as plan:
        assert storage.create_exclusive("x", b"data") is True
        assert storage.create_exclusive("x", b"other") is False
    assert sum(plan.injected.values()) == 1
    assert storage.read("x") == b"data"
    assert storage.list() == ["x"]  # the probe object is gone


def test_a_lost_reply_to_the_commit_point_is_reported_as_unknown(s3_server: Any) -> None:
    """The root's conditional PUT lands, then the store stops answering: the caller
    cannot know whether the commit happened, and must not be told it failed (a retry
    would apply the change twice)."""
    bucket = s3_server.create_bucket()
    root = f"s3://{bucket}/lake"
    checker = LakehouseCatalog(root, create=True, storage_options=s3_server.storage_options,
                               lakehouse_options=SMALL_TREE)
    txn = checker.begin()
    txn.create_namespace("ns")
    txn.create_table("ns", "t0", columns("id"))
    txn.commit()
    tripped = {"yes": False}

    def rule(request: Any) -> Fault | None:
        if request.method == "PUT" and request.conditional and "/lake/_" in request.path:
            tripped["yes"] = True
        return Fault("InternalError", "after") if tripped["yes"] else None

    with faults(in_bucket(bucket, rule)):
        with pytest.raises(StorageError, match="outcome is unknown") as raised:
            _commit_one(root, s3_server, "c")
    assert "version 2" in str(raised.value)
    assert checker.latest_version() == 2  # it did commit
