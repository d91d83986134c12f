"""docs/examples/spark_pipeline.py runs (issue 7, acceptance 5)."""

from __future__ import annotations

import decimal
import importlib.util
import os

from trinitylake_dbapi.catalog import LakehouseCatalog
from pyspark.sql.types import StructField, StructType

from trinitylake_dbapi.format.types import ColumnSpec, without_ids

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
    data = str(tmp_path / "data" / "orders")
    example.create_lakehouse(location, data)
    seen = example.run(spark, location)

    assert seen["location"] == data
    assert os.listdir(data)  # Parquet files at the table's location
    # Spark reads every column of a file source as nullable; all else is the table's.
    assert seen["read_schema"] == StructType(
        [StructField(f.name, f.dataType, True, f.metadata) for f in seen["schema"].fields]
    )
    table = LakehouseCatalog(location).begin().describe_table("sales", "orders")
    assert [without_ids(c) for c in seen["columns"]] == [
        ColumnSpec(c.name, c.type, True, c.comment) for c in map(without_ids, table.columns)
    ]
    assert not table.columns[0].nullable
    assert [r.id for r in seen["rows"]] == [1, 2]
    assert seen["rows"][0].amount == decimal.Decimal("19.99")
    assert seen["schema"]["amount"].metadata["comment"] == "in EUR"
