"""Table data through Spark (issue 19, acceptance 6): the ``trinitylake`` data source
writing and reading ``rows`` rows, side by side with pyarrow writing and reading the
same rows as Parquet on the same disk, and with two Spark references.

One local SparkSession (``local[2]``, set up as tests/spark/conftest.py and NOTES.md
say, but with the JVM's full JIT: see ``start_session``) is started once. The rows
(8 columns: BIGINT, INT, DOUBLE, two STRINGs, DATE, TIMESTAMP, DECIMAL(10,2)) are made
by Spark in two partitions and cached in the JVM; pyarrow gets exactly those rows
(``toArrow``). Both sides start from the same rows in memory; only writing and reading
are timed.

Sides, per repetition, in an order reversed every repetition:

* ``trinitylake``: ``df.write.format("trinitylake")...mode("overwrite").save()`` (the
  executors write Parquet data files with PyIceberg's writer, the driver commits one
  lakehouse version), and ``spark.read.format("trinitylake")...load()`` aggregated over
  every column (count, sums, maxima: every row and column is read and converted);
* ``pyarrow``: ``pyarrow.parquet.write_table`` of the Arrow table into a new file with
  the codec our data files use (zstd, PyIceberg's default), and ``read_table`` of it with
  the same aggregate in ``pyarrow.compute``: a Python program without Spark (the peer);
* ``spark-parquet``: Spark's own ``df.write.parquet`` (zstd) and ``spark.read.parquet``
  with the same aggregate: the JVM's Parquet path;
* ``python-datasource``: the same PySpark Python Data Source API as ours, with a
  minimal source that writes and reads Parquet with pyarrow alone (bench/spark_peer.py):
  what the API costs before any Iceberg or lakehouse work.

The first write and read of the session (cold: Spark starts its Python workers, which
import pyarrow, PyIceberg and this package) are reported apart; then one warm-up write
and read per side, then the measured repetitions. Every read must give the same
aggregate on every side, and the lakehouse version must grow by one per write.
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import time
from typing import Any, Callable

#: The aggregate every side computes: every column of every row is read.
AGGREGATE = ("count(*)", "sum(id)", "sum(k)", "sum(amount)", "max(name)", "max(category)",
             "max(day)", "max(unix_micros(ts))", "sum(price)")  # fmt: skip
#: The rows: Spark SQL expressions over ``id`` (spark.range).
COLUMNS = (
    "id",
    "cast(id % 100 AS int) AS k",
    "cast(id AS double) * 0.25 AS amount",
    "concat('customer-', cast(id * 7919 % 1000003 AS string)) AS name",
    "element_at(array('books', 'garden', 'music', 'toys', 'food', 'tools', 'games', 'shoes'), "
    "cast(id % 8 AS int) + 1) AS category",
    "date_add(DATE'2026-01-01', cast(id % 365 AS int)) AS day",
    "timestamp_micros(1767225600000000 + id * 1000003) AS ts",
    "cast((id % 100000) / 100 AS decimal(10, 2)) AS price",
)
SIDES = ("trinitylake", "pyarrow", "spark-parquet", "python-datasource")
PEERS = SIDES[1:]
CODEC = "zstd"
TABLE = "bench.rows"
#: JVM options: the serial collector as in the tests, but the full JIT. The tests' and
#: docs/spark.md's ``-XX:TieredStopAtLevel=1`` (C1 only) halves session start and makes
#: a million-row job 2-3 times slower (measured: Spark's own Parquet write 20 s -> 6.5 s).
JVM_OPTIONS = "-XX:+UseSerialGC"


#: The session's settings (NOTES.md, PySpark): no UI, two partitions for shuffles, UTC.
SESSION_CONFIG = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.memory": "2g",
    "spark.driver.extraJavaOptions": JVM_OPTIONS,
    "spark.executor.extraJavaOptions": JVM_OPTIONS,
}


def why_not_available() -> str | None:
    """None when the Spark sides can run here, else why not (the section is skipped)."""
    try:
        import pyspark  # noqa: F401
    except ImportError as e:
        return f"pyspark is not importable ({e}); install the spark extra"
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "no Java runtime (java on PATH or JAVA_HOME) for Spark"
    return None


def start_session() -> Any:
    """A local[2] SparkSession whose Python workers import this checkout (its root first
    on PYTHONPATH, set before the JVM starts, as tests/spark/conftest.py does)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    path = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != root]
    os.environ["PYTHONPATH"] = os.pathsep.join([root, *path])
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master("local[2]").appName("trinitylake-bench")
    for key, value in SESSION_CONFIG.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


def _pyarrow_aggregate(table: Any) -> tuple:
    import pyarrow as pa
    import pyarrow.compute as pc

    return (table.num_rows, pc.sum(table["id"]).as_py(), pc.sum(table["k"]).as_py(), pc.sum(table["amount"]).as_py(),
            pc.max(table["name"]).as_py(), pc.max(table["category"]).as_py(), pc.max(table["day"]).as_py(),
            pc.max(table["ts"].cast(pa.int64())).as_py(), pc.sum(table["price"]).as_py())  # fmt: skip


def _same(a: tuple, b: tuple) -> bool:
    """Aggregates equal, the double sum up to summation order."""
    return all(
        abs(x - y) <= 1e-9 * max(1.0, abs(x)) if isinstance(x, float) else x == y for x, y in zip(a, b, strict=True)
    )


class Sides:
    """Each side's write and read over the same rows. Every write goes to a new file or
    directory on the other sides (a new data file, as on ours); a read reads the newest."""

    def __init__(self, spark: Any, rows: int, directory: str) -> None:
        from trinitylake_dbapi.iceberg.catalog import TrinityLakeCatalog
        from trinitylake_dbapi.spark import register

        from . import spark_peer

        self.spark, self.directory = spark, directory
        register(spark)  # found on its own when the package is installed; not all checkouts are
        spark.dataSource.register(spark_peer.ParquetFilesSource)
        self.lake = os.path.join(directory, "lake")
        catalog = TrinityLakeCatalog("bench", uri=self.lake, create="true")
        catalog.create_namespace(TABLE.split(".")[0])
        catalog.close()
        started = time.perf_counter()
        self.df = spark.range(0, rows, 1, 2).selectExpr(*COLUMNS).cache()
        assert self.df.count() == rows
        self.table = self.df.toArrow()  # exactly the rows Spark holds
        self.prepare_seconds = time.perf_counter() - started
        self.partitions = self.df.rdd.getNumPartitions()
        self.writes = 0
        self.last: dict[str, int] = {}  # side -> number of its newest write

    def _path(self, side: str, number: int | None = None) -> str:
        return os.path.join(self.directory, side, f"w{self.writes if number is None else number:04d}")

    def write(self, side: str) -> None:
        self.writes += 1
        if side == "trinitylake":
            (self.df.write.format("trinitylake").option("location", self.lake).option("table", TABLE)
             .option("create", "true").mode("overwrite").save())  # fmt: skip
        elif side == "pyarrow":
            import pyarrow.parquet as pq

            os.makedirs(os.path.dirname(self._path(side)), exist_ok=True)
            pq.write_table(self.table, self._path(side) + ".parquet", compression=CODEC)
        elif side == "spark-parquet":
            self.df.write.option("compression", CODEC).parquet(self._path(side))
        else:
            self.df.write.format("bench-parquet").option("path", self._path(side)).mode("append").save()
        self.last[side] = self.writes

    def read(self, side: str) -> tuple:
        path = self._path(side, self.last[side])
        if side == "pyarrow":
            import pyarrow.parquet as pq

            return _pyarrow_aggregate(pq.read_table(path + ".parquet"))
        if side == "trinitylake":
            df = self.spark.read.format("trinitylake").option("location", self.lake).option("table", TABLE).load()
        elif side == "spark-parquet":
            df = self.spark.read.parquet(path)
        else:
            df = self.spark.read.format("bench-parquet").schema(self.df.schema).option("path", path).load()
        row = df.selectExpr(*AGGREGATE).collect()[0]
        return tuple(float(v) if i == 3 else v for i, v in enumerate(row))

    def data_files(self) -> dict[str, dict[str, int]]:
        """Files and bytes of the newest write per side (the table's current files on ours)."""
        from trinitylake_dbapi.iceberg.catalog import TrinityLakeCatalog

        catalog = TrinityLakeCatalog("bench", uri=self.lake)
        ours = [task.file for task in catalog.load_table(TABLE).scan().plan_files()]
        catalog.close()
        out = {"trinitylake": {"files": len(ours), "bytes": sum(f.file_size_in_bytes for f in ours)}}
        single = self._path("pyarrow", self.last["pyarrow"]) + ".parquet"
        out["pyarrow"] = {"files": 1, "bytes": os.path.getsize(single)}
        for side in ("spark-parquet", "python-datasource"):
            folder = self._path(side, self.last[side])
            names = [os.path.join(folder, n) for n in os.listdir(folder) if n.endswith(".parquet")]
            out[side] = {"files": len(names), "bytes": sum(map(os.path.getsize, names))}
        return out


def spark(
    workdir: str, rows: int, reps: int, log: Callable[[str], None], session: Any = None, warm_up: bool = True
) -> dict:
    """Cold first write and read, then median seconds per side over ``reps`` interleaved
    repetitions, and the ratio ours / peer per repetition (median).

    ``session``: an existing SparkSession to use (and leave running), e.g. a test's;
    by default one is started here and stopped at the end. ``warm_up`` False skips the
    warm-up round (for a run that only checks the harness: its timings mean little)."""
    why = why_not_available()
    if why is not None:
        log(f"spark: skipped: {why}")
        return {"skipped": why}
    directory = os.path.join(workdir, "spark")
    os.makedirs(directory)
    started = time.perf_counter()
    own = session is None
    if own:
        session = start_session()
    out: dict = {"rows": rows, "reps": reps, "codec": CODEC, "jvm_options": JVM_OPTIONS,
                 "session_start_s": time.perf_counter() - started if own else None}  # fmt: skip
    try:
        sides = Sides(session, rows, directory)
        out["partitions"], out["prepare_seconds"] = sides.partitions, sides.prepare_seconds
        log(f"spark: session ready after {time.perf_counter() - started:.1f} s; {rows:,} rows cached in "
            f"{sides.partitions} partitions and copied to Arrow in {sides.prepare_seconds:.1f} s")  # fmt: skip
        from trinitylake_dbapi.catalog import LakehouseCatalog

        history = LakehouseCatalog(sides.lake)
        expected = _pyarrow_aggregate(sides.table)
        cold: dict[str, float] = {}
        for phase, run in (("write", sides.write), ("read", sides.read)):
            t0 = time.perf_counter()
            result = run("trinitylake")
            cold[phase] = time.perf_counter() - t0
            if phase == "read":
                assert _same(result, expected), (result, expected)
        out["cold_seconds"] = cold
        log(f"spark: first write {cold['write']:.1f} s, first read {cold['read']:.1f} s")
        warm: dict[str, dict[str, float]] = {}
        for side in SIDES if warm_up else ():  # imports, JIT, the workers of every side
            t0 = time.perf_counter()
            sides.write(side)
            t1 = time.perf_counter()
            result = sides.read(side)
            warm[side] = {"write": t1 - t0, "read": time.perf_counter() - t1}
            assert _same(result, expected), (side, result, expected)
        out["warm_up_seconds"] = warm
        timings: dict[str, dict[str, list[float]]] = {s: {"write": [], "read": []} for s in SIDES}
        for rep in range(reps):
            for side in SIDES if rep % 2 == 0 else SIDES[::-1]:
                before = history.latest_version()
                t0 = time.perf_counter()
                sides.write(side)
                t1 = time.perf_counter()
                result = sides.read(side)
                t2 = time.perf_counter()
                timings[side]["write"].append(t1 - t0)
                timings[side]["read"].append(t2 - t1)
                assert _same(result, expected), (side, result, expected)
                if side == "trinitylake":
                    assert history.latest_version() == before + 1, "one lakehouse version per write"
            log(f"spark: rep {rep + 1}/{reps}: " + ", ".join(
                f"{s} {timings[s]['write'][-1]:.2f} / {timings[s]['read'][-1]:.2f} s" for s in SIDES))  # fmt: skip
        history.close()
        out["data_files"] = sides.data_files()
        sides.df.unpersist()
    finally:
        if own:
            session.stop()
    out["median_seconds"] = {s: {op: statistics.median(t) for op, t in ops.items()} for s, ops in timings.items()}
    out["ratio"] = {
        peer: {op: statistics.median(o / p for o, p in zip(timings["trinitylake"][op], timings[peer][op]))
               for op in ("write", "read")}
        for peer in PEERS
    }  # fmt: skip
    return out
