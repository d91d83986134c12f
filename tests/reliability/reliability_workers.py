"""Writer processes for the race, crash and soak tests, and the model that replays
their acknowledged history (importable after spawn: no test fixtures here).

An operation is a plain tuple, so it can cross process boundaries and be replayed:

  ("create_namespace", ns)               ("drop_namespace", ns)   (CASCADE)
  ("create_table", ns, t, (col, ...))    ("drop_table", ns, t)
  ("add_column", ns, t, col)             ("rename_table", ns, t, ns2, t2)
  ("set_property", ns, t, key, value)    ("count_tables", ns)  (SERIALIZABLE: sets the
                                          namespace property "tables" to the count)
  ("create_tables", ns, (t, ...))        (several tables in one transaction)

``apply`` is the model: it applies an operation to a dict ``{ns: {"props": {...},
"tables": {t: {"columns": [...], "props": {...}}}}}`` and raises ``Invalid`` when the
operation could not have committed on that state.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections import Counter
from typing import Any

from lake_builders import columns
from deadlines import HANG_S
from trinitylake_dbapi.catalog import LakehouseCatalog
from trinitylake_dbapi.errors import Error
from trinitylake_dbapi import maintenance

Op = tuple


class Invalid(Exception):
    """An acknowledged operation that the model says could not have committed."""


# --- the model -------------------------------------------------------------------------------


def apply(model: dict, op: Op) -> None:
    kind = op[0]
    if kind == "create_namespace":
        _, ns = op
        if ns in model:
            raise Invalid(f"{op}: namespace exists")
        model[ns] = {"props": {}, "tables": {}}
    elif kind == "drop_namespace":
        _, ns = op
        if ns not in model:
            raise Invalid(f"{op}: no namespace")
        del model[ns]
    elif kind in ("create_table", "create_tables"):
        ns = op[1]
        items = [(op[2], op[3])] if kind == "create_table" else [(t, ("id",)) for t in op[2]]
        if ns not in model:
            raise Invalid(f"{op}: no namespace")
        for t, cols in items:
            if t in model[ns]["tables"]:
                raise Invalid(f"{op}: table exists")
            model[ns]["tables"][t] = {"columns": list(cols), "props": {}}
    elif kind == "drop_table":
        _, ns, t = op
        if t not in model.get(ns, {}).get("tables", {}):
            raise Invalid(f"{op}: no table")
        del model[ns]["tables"][t]
    elif kind == "add_column":
        _, ns, t, col = op
        table = model.get(ns, {}).get("tables", {}).get(t)
        if table is None or col in table["columns"]:
            raise Invalid(f"{op}: no table or column exists")
        table["columns"].append(col)
    elif kind == "rename_table":
        _, ns, t, ns2, t2 = op
        table = model.get(ns, {}).get("tables", {}).get(t)
        if table is None or ns2 not in model or t2 in model[ns2]["tables"]:
            raise Invalid(f"{op}: source missing or target exists")
        del model[ns]["tables"][t]
        model[ns2]["tables"][t2] = table
    elif kind == "set_property":
        _, ns, t, key, value = op
        table = model.get(ns, {}).get("tables", {}).get(t)
        if table is None:
            raise Invalid(f"{op}: no table")
        table["props"][key] = value
    elif kind == "count_tables":
        _, ns, count = op
        if ns not in model:
            raise Invalid(f"{op}: no namespace")
        if len(model[ns]["tables"]) != count:
            raise Invalid(f"{op}: SERIALIZABLE count {count} but the namespace holds "
                          f"{len(model[ns]['tables'])} tables at its version")
        model[ns]["props"]["tables"] = str(count)
    else:  # pragma: no cover
        raise ValueError(op)


def observed(txn: Any) -> dict:
    """The catalog state in the model's shape."""
    out: dict = {}
    for ns in txn.list_namespaces():
        out[ns] = {"props": dict(txn.describe_namespace(ns).properties), "tables": {}}
        for _, t in txn.list_tables(ns):
            info = txn.describe_table(ns, t)
            out[ns]["tables"][t] = {"columns": [c.name for c in info.columns],
                                    "props": dict(info.properties)}
    return out


# --- one random operation ------------------------------------------------------------------


def random_op(txn: Any, rng: random.Random, worker: int, seq: int, namespaces: int,
              tables: int) -> Op:
    """An operation that is valid on ``txn``'s view (it may still lose a race).
    ``count_tables`` only in a SERIALIZABLE transaction: under snapshot isolation its
    count may be stale when it commits (write skew), which the model would reject."""
    ns = f"n{rng.randrange(namespaces)}"
    existing = set(txn.list_namespaces())
    if ns not in existing:
        return ("create_namespace", ns)
    present = [t for _, t in txn.list_tables(ns)]
    t = f"t{rng.randrange(tables)}"
    roll = rng.random()
    if roll < 0.04:
        return ("drop_namespace", ns)
    if roll < 0.10 and txn.isolation.value == "SERIALIZABLE":
        return ("count_tables", ns, len(present))
    if t not in present:
        if roll < 0.25:
            group = tuple(sorted({t, f"t{rng.randrange(tables)}"} - set(present)))
            return ("create_tables", ns, group)
        return ("create_table", ns, t, ("id", f"c{worker}_{seq}"))
    if roll < 0.35:
        return ("drop_table", ns, t)
    if roll < 0.45:
        target_ns = f"n{rng.randrange(namespaces)}"
        target = f"t{rng.randrange(tables)}"
        if target_ns in existing and target not in {x for _, x in txn.list_tables(target_ns)}:
            return ("rename_table", ns, t, target_ns, target)
    if roll < 0.75:
        return ("add_column", ns, t, f"a{worker}_{seq}")
    return ("set_property", ns, t, f"p{rng.randrange(3)}", f"{worker}.{seq}")


def run_op(catalog: LakehouseCatalog, txn: Any, op: Op) -> None:
    """Apply ``op`` through the catalog API in ``txn`` (not committed)."""
    kind = op[0]
    if kind == "create_namespace":
        txn.create_namespace(op[1])
    elif kind == "drop_namespace":
        txn.drop_namespace(op[1], cascade=True)
    elif kind == "create_table":
        txn.create_table(op[1], op[2], columns(*op[3]))
    elif kind == "create_tables":
        for t in op[2]:
            txn.create_table(op[1], t, columns("id"))
    elif kind == "drop_table":
        txn.drop_table(op[1], op[2])
    elif kind == "add_column":
        txn.add_columns(op[1], op[2], columns(op[3]))
    elif kind == "rename_table":
        txn.rename_table(*op[1:])
    elif kind == "set_property":
        txn.set_table_properties(op[1], op[2], {op[3]: op[4]})
    elif kind == "count_tables":
        txn.alter_namespace(op[1], set_properties={"tables": str(op[2])})


def writer(location: str, storage_options: dict | None, worker: int, ops: int, seed: int,
           namespaces: int = 3, tables: int = 4, log_path: str | None = None,
           deadline: float | None = None) -> dict:
    """Commit ``ops`` random operations (or until ``deadline``); returns the log.

    Every acknowledged commit is appended to ``log_path`` (one JSON line, flushed and
    fsynced) *after* ``commit()`` returned: the crash tests kill writers at random and
    then check that every line in the log is in the lakehouse.
    """
    rng = random.Random(seed)
    catalog = LakehouseCatalog(location, storage_options=storage_options)
    acknowledged: list[tuple[int, Op]] = []
    failures: dict[str, int] = {}
    log = open(log_path, "a", encoding="utf-8") if log_path else None
    seq = 0
    try:
        while (deadline is None and seq < ops) or (deadline is not None and time.time() < deadline):
            seq += 1
            isolation = "SERIALIZABLE" if rng.random() < 0.25 else "SNAPSHOT"
            try:
                txn = catalog.begin(isolation)
                op = random_op(txn, rng, worker, seq, namespaces, tables)
                run_op(catalog, txn, op)
                before = txn.version
                version = txn.commit()
            except Error as e:
                failures[type(e).__name__] = failures.get(type(e).__name__, 0) + 1
                continue
            assert version > before, (op, version, before)
            acknowledged.append((version, op))
            if log is not None:
                log.write(json.dumps([version, op]) + "\n")
                log.flush()
                os.fsync(log.fileno())
    finally:
        if log is not None:
            log.close()
    return {"worker": worker, "acknowledged": acknowledged, "failures": failures}


def check_linearizable(catalog: LakehouseCatalog, start: int,
                       acknowledged: list[tuple[int, tuple]]) -> dict:
    """The checks of the module docstring; returns the final model."""
    latest = catalog.latest_version()
    versions = [v for v, _ in acknowledged]
    assert len(versions) == len(set(versions)), Counter(versions).most_common(3)
    assert sorted(versions) == list(range(start + 1, latest + 1)), (start, latest, sorted(versions))
    history = catalog.versions()
    assert [h.version for h in history] == list(range(latest, -1, -1))
    for info in history[:-1]:
        assert info.previous_version == info.version - 1
    model = observed(catalog.begin(version=start))
    for version, op in sorted(acknowledged):
        apply(model, op)
        assert observed(catalog.begin(version=version)) == model, (version, op)
    from trinitylake_dbapi.verify import verify

    report = verify(catalog.storage, all_versions=True)
    assert report.ok, report.text()
    return model


def to_op(item: Any) -> Op:
    """A JSON-decoded operation back to a tuple (lists inside become tuples)."""
    return tuple(tuple(x) if isinstance(x, list) else x for x in item)


# --- crashes ---------------------------------------------------------------------------------

#: The os calls through which local Storage changes the disk.
MUTATING_OS_CALLS = ("open", "write", "fsync", "link", "replace", "unlink", "makedirs")


def crashing_writer(location: str, kill_at_call: int, ops: int, seed: int, log_path: str) -> None:
    """``writer``, SIGKILLed by itself just before its ``kill_at_call``-th mutating os
    call (counted from opening the lakehouse): no finally block, no flush, nothing."""
    import signal

    calls = 0

    def wrap(name: str) -> None:
        original = getattr(os, name)

        def crashing(*args: Any, **kwargs: Any) -> Any:
            nonlocal calls
            calls += 1
            if calls == kill_at_call:
                os.kill(os.getpid(), signal.SIGKILL)
            return original(*args, **kwargs)

        setattr(os, name, crashing)

    for name in MUTATING_OS_CALLS:
        wrap(name)
    writer(location, None, 0, ops, seed, log_path=log_path)


def holds(txn: Any, op: Op) -> bool:
    """Does the state seen by ``txn`` (the version an operation committed as) show the
    operation's effect?"""
    kind = op[0]

    def table(ns: str, t: str) -> Any:
        return txn.describe_table(ns, t) if txn.table_exists(ns, t) else None

    if kind == "create_namespace":
        return txn.namespace_exists(op[1])
    if kind == "drop_namespace":
        return not txn.namespace_exists(op[1])
    if kind == "create_table":
        info = table(op[1], op[2])
        return info is not None and [c.name for c in info.columns] == list(op[3])
    if kind == "create_tables":
        return all(txn.table_exists(op[1], t) for t in op[2])
    if kind == "drop_table":
        return not txn.namespace_exists(op[1]) or not txn.table_exists(op[1], op[2])
    if kind == "add_column":
        info = table(op[1], op[2])
        return info is not None and op[3] in [c.name for c in info.columns]
    if kind == "rename_table":
        return txn.table_exists(op[3], op[4]) and not txn.table_exists(op[1], op[2])
    if kind == "set_property":
        info = table(op[1], op[2])
        return info is not None and info.properties.get(op[3]) == op[4]
    if kind == "count_tables":
        return txn.describe_namespace(op[1]).properties.get("tables") == str(op[2])
    raise ValueError(op)  # pragma: no cover


def read_log(path: str) -> list[tuple[int, Op]]:
    """Acknowledged commits of a log; a torn last line (killed mid-write) is ignored."""
    out = []
    if not os.path.exists(path):
        return out
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                version, op = json.loads(line)
            except ValueError:
                continue
            out.append((version, to_op(op)))
    return out


def _wait_for(path: str, timeout: float = HANG_S) -> None:
    """Block until ``path`` exists (another process's signal)."""
    give_up = time.time() + timeout
    while not os.path.exists(path):
        if time.time() > give_up:
            raise TimeoutError(f"no {path} after {timeout} s")
        time.sleep(0.01)


def paced_creator(location: str, worker: int, commits: int, seed: int, signals: str) -> dict:
    """Once the expirer runs (``signals``/expiring exists), create tables
    ``w<worker>_<i>`` one commit each until ``commits`` are acknowledged, pausing now
    and then for about FRESH_LATEST_S (so that this process's last observation of the
    latest version is sometimes just fresh, sometimes just stale, when it begins
    again); then leave ``signals``/done-<worker>. Returns the acknowledged (version,
    table) pairs and the refused count. Counted, not timed: a loaded host makes the
    race slower, never smaller."""
    rng = random.Random(seed)
    catalog = LakehouseCatalog(location)
    acknowledged: list[tuple[int, str]] = []
    refused: dict[str, int] = {}
    seq = 0
    _wait_for(os.path.join(signals, "expiring"))
    while len(acknowledged) < commits:
        seq += 1
        table = f"w{worker}_{seq}"
        try:
            txn = catalog.begin()
            txn.create_table("ns", table, columns("id"))
            acknowledged.append((txn.commit(), table))
        except Error as e:
            refused[type(e).__name__] = refused.get(type(e).__name__, 0) + 1
        if rng.random() < 0.5:
            time.sleep(rng.uniform(0.1, 0.3))
    open(os.path.join(signals, f"done-{worker}"), "w").close()
    return {"acknowledged": acknowledged, "refused": refused}


def expirer(location: str, writers: int, signals: str) -> list[int]:
    """Signal ``signals``/expiring, then expire every version but the newest, again
    and again, until the ``writers`` paced creators are done; returns the expired
    versions."""
    catalog = LakehouseCatalog(location)
    expired: list[int] = []
    open(os.path.join(signals, "expiring"), "w").close()
    done = [os.path.join(signals, f"done-{w}") for w in range(writers)]
    while not all(os.path.exists(d) for d in done):
        expired += maintenance.expire_versions(catalog, retain_last=1, older_than_millis=int(time.time() * 1000) + 10**6).versions
    return expired
