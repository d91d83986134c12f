"""Writers racing with version expiration: no acknowledged commit is lost.

A writer that takes an expired hole for the end of the history commits "v+1" inside
it: the commit is acknowledged, but no reader ever finds it. Version discovery trusts
a recent observation (lakehouse D1, D3) because expiration deletes a root only a
while after listing it (maintenance E7). Here writer processes, some pausing for about
the trust window between commits, race with a process that expires everything but the
newest version as fast as it can. Checked afterwards: every acknowledged table is in
the latest version and nothing else is, acknowledged versions are unique, the history
that remains is one contiguous chain, and ``verify`` finds no error.
"""

from __future__ import annotations

import warm_processes
from typing import Any

from deadlines import HANG_S
from reliability_workers import expirer, paced_creator
from trinitylake_dbapi.catalog import LakehouseCatalog
from trinitylake_dbapi.verify import verify


def test_no_commit_is_lost_while_expiration_runs(tmp_path: Any) -> None:
    location = str(tmp_path / "lake")
    catalog = LakehouseCatalog(location, create=True, lakehouse_options={"minimum_versions_to_keep": 1})
    txn = catalog.begin()
    txn.create_namespace("ns")
    txn.commit()
    signals = tmp_path / "signals"
    signals.mkdir()
    context = warm_processes.context()  # spawn's imports were most of the run
    with context.Pool(4) as pool:
        expiring = pool.apply_async(expirer, (location, 3, str(signals)))
        writers = [pool.apply_async(paced_creator, (location, w, 12, w, str(signals))) for w in range(3)]
        results = [w.get(timeout=HANG_S) for w in writers]
        expired = expiring.get(timeout=HANG_S)

    acknowledged = [pair for r in results for pair in r["acknowledged"]]
    versions = [v for v, _ in acknowledged]
    assert len(versions) == len(set(versions))
    fresh = LakehouseCatalog(location)
    tables = {t for _, t in fresh.begin().list_tables("ns")}
    assert tables == {t for _, t in acknowledged}, sorted(tables ^ {t for _, t in acknowledged})[:10]
    history = fresh.versions()
    assert [h.version for h in history] == list(range(fresh.latest_version(), history[-1].version - 1, -1))
    report = verify(fresh.storage, all_versions=True)
    assert report.ok, report.text()
    # the run really raced: many commits, and expiration deleted versions under them
    assert len(acknowledged) >= 30 and len(expired) >= 10, (len(acknowledged), len(expired))
    print(f"\n{len(acknowledged)} commits, {len(expired)} versions expired under them, "
          f"refused {[r['refused'] for r in results]}")
