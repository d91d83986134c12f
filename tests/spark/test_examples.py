"""docs/examples/spark_pipeline.py runs (issue 7, acceptance 5; issue 19: the pipeline
reads a table, writes two tables in one version, time-travels and rolls back)."""

from __future__ import annotations

import decimal
import importlib.util
import os

from trinitylake_dbapi.catalog import LakehouseCatalog

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "examples", "spark_pipeline.py")


def load_example():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("spark_pipeline", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_pipeline_example(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    example = load_example()
    location = str(tmp_path / "lake")
    example.create_lakehouse(location)
    before = LakehouseCatalog(location).latest_version()
    seen = example.run(spark, location)

    assert seen["published"] == before + 1  # two tables, one version
    d = decimal.Decimal
    assert seen["eu_orders"] == [(1, "eu", d("19.99")), (3, "eu", d("7.50"))]
    assert seen["totals"] == [("eu", d("27.49"), 2), ("us", d("5.00"), 1)]
    assert seen["eu_orders_before"] == seen["totals_before"] == []
    assert seen["eu_orders_rolled_back"] == seen["totals_rolled_back"] == []
    assert LakehouseCatalog(location).latest_version() == before + 2
