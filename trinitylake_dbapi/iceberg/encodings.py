"""Which columns of a data file get a Parquet dictionary (issue 34).

pyarrow, which writes our data files (iceberg.writing W9), dictionary-encodes every
column it can until the dictionary outgrows ``write.parquet.dict-size-bytes``; a column
of unique values (a key, a sequence number, a timestamp) then carries a dictionary as
large as the column and, per value, an index into it. Iceberg's reference writer
(Java, parquet-mr, which Spark and Trino use) keeps a column's dictionary only if it
pays: at the end of a column chunk's first page, parquet-mr's ``FallbackValuesWriter``
falls back to PLAIN for the chunk unless the dictionary-encoded size (the bit-packed
indices) plus the dictionary's size is below the plain size
(``isCompressionSatisfying``), and also when the dictionary grows past its size limit.
Measured (2026-11-27, DuckDB 2.0.1, process CPU, least of 7-9): the 1,000,000-row table
of ``bench --only everyday`` written with a dictionary on its unique ``id``, then
without: GROUP BY 33.2 -> 27.6 ms, ``WHERE id % 100 = k`` 29.0 -> 24.2 ms, the
selective range filter 5.0 -> 4.1 ms; pyarrow writes the file in 141 -> 58 ms of CPU
(3.3 -> 1.4 MB). One column of 1,000,000 values scanned (``sum(hash(x))``, ZSTD),
dictionary -> PLAIN: unique sorted longs 24.5 -> 18.8 ms, random longs 12.8 -> 7.5,
timestamps 22.6 -> 19.1, unique doubles 24.6 -> 20.0, unique strings 44.6 -> 38.7;
where the test keeps the dictionary it scans cheaper than PLAIN (30,000 random values:
10.5 against 14.9 ms; 100 values: 5.2 against 19.3 ms; 50 strings: 6.3 against 30.4).

Rules:

  PE1 A data file's leaf column gets a dictionary if and only if it pays on the file's
      first page's worth of values (:func:`column_options`): from the first
      ``sample`` rows (the table's ``write.parquet.page-row-limit``, 20,000 by
      default: the rows of parquet-mr's first page), that leaf's non-null values up to
      a page of them (``write.parquet.page-size-bytes`` of plain values, 1 MiB by
      default, at least one value; hashing 20,000 values of 1 KB cost half the write
      of the file): their number ``n``, their distinct values ``d``, the plain size
      ``P`` (a fixed-width value's Parquet physical width times ``n``; a string's or
      binary's bytes plus 4 per value) and the dictionary's size ``D`` (the same over
      the ``d`` distinct values); it pays when ``ceil(n * bit_width(d - 1) / 8) + D <
      P``, parquet-mr's test. A leaf with no non-null value in the sample, a BOOLEAN (Parquet has no
      dictionary for it) and a type not sized here keep their dictionary. pyarrow's
      size limit (``write.parquet.dict-size-bytes``) still ends a dictionary that
      grows past it later in the file. The decision is per file (pyarrow takes one
      set of column options per file; parquet-mr decides per column chunk).
  PE2 Only the encoding changes: the same rows, schema, field ids, row groups and
      statistics (bounds, counts); the file's size, its columns' sizes and its row
      groups' offsets follow the encoding. Every column is PLAIN or dictionary
      (RLE_DICTIONARY), the encodings every Parquet and Iceberg reader reads (unless
      the table opts into PE3); when every leaf's dictionary pays and the file gets no
      page index (PE4), pyarrow is called exactly as PyIceberg calls it (the same bytes
      as PyIceberg's ``write_file``).
  PE3 A table that sets ``write.parquet.integer-encoding = delta`` (this library's
      property; default ``plain``, any other value is ``plain``) gets, in every leaf
      of an integer physical type (Iceberg int, long, date, time, timestamp and
      decimals of precision up to 18) that PE1 leaves without a dictionary,
      DELTA_BINARY_PACKED pages instead of PLAIN. Opt-in because Iceberg's own
      vectorized Parquet reader (Spark with Iceberg's runtime, vectorization on by
      default) reads DELTA_BINARY_PACKED only since apache/iceberg #13391 (2025,
      Iceberg 1.10); PyIceberg, DuckDB, Trino and Spark's own reader read it. Measured
      (2026-11-27, DuckDB 2.0.1, process CPU, least of 5-9, ZSTD): the everyday
      bench table with its ``id`` DELTA_BINARY_PACKED instead of PLAIN, GROUP BY
      27.6 -> 15.5 ms, ``WHERE id % 100 = k`` 24.2 -> 10.9 ms, range filter 4.1 ->
      2.7 ms, the file 1.36 -> 0.35 MB; 1,000,000 values scanned (``sum(hash(x))``),
      PLAIN -> DELTA: sorted 18.8 -> 5.7 ms, timestamps with jitter 19.1 -> 7.5,
      random in 100,000 values 17.6 -> 6.8, random int64 7.5 -> 8.3 (incompressible;
      the only shape measured slower).
  PE4 A data file of more than one page (more than :data:`PAGE_ROWS` rows, pyarrow's
      most rows per page, or more than ``write.parquet.page-size-bytes`` of Arrow
      data) carries Parquet's page index (ColumnIndex and OffsetIndex: each page's
      bounds and offset), as parquet-mr writes it by default; readers that do not know
      it ignore it. A smaller file has one page per column chunk, which its row
      group's statistics already bound, and skips it (a one-row file's write: 153 ->
      176 us of CPU with one). Measured (2026-11-27, DuckDB 2.0.1, process CPU, least
      of 7, the everyday bench table's file): the selective range filter 3.9 -> 2.7 ms
      (DuckDB skips the pages outside the range), GROUP BY and ``id % 100 = k``
      unchanged, the 1,000,000-row file written in the same CPU (58.1 / 58.2 ms).
"""

from __future__ import annotations

import functools
from typing import Any

__all__ = ["INTEGER_ENCODING", "PAGE_ROWS", "column_options", "delta_integers",
           "dictionary_pays", "leaf_columns"]

#: PE4: the most rows pyarrow puts in a data page (its ``max_rows_per_page`` default).
PAGE_ROWS = 20_000
#: PE3: the table property that opts into DELTA_BINARY_PACKED integers (``delta``).
INTEGER_ENCODING = "write.parquet.integer-encoding"


@functools.lru_cache(maxsize=256)
def _plain_width(kind: Any) -> int | None:
    """The bytes of one value of the fixed-width arrow type ``kind`` in Parquet (its
    physical type, decimals stored as integers where they fit, as PyIceberg writes them);
    None for a type not sized here."""
    import pyarrow as pa

    t = pa.types
    if t.is_decimal(kind):
        if kind.precision <= 9:
            return 4
        if kind.precision <= 18:
            return 8
        return (kind.precision * 3322 // 1000 + 1) // 8 + 1  # the fewest bytes holding 10**p, signed
    if t.is_int8(kind) or t.is_int16(kind) or t.is_int32(kind) or t.is_date32(kind) or t.is_time32(kind):
        return 4
    if t.is_uint8(kind) or t.is_uint16(kind) or t.is_uint32(kind):
        return 4
    if t.is_integer(kind) or t.is_timestamp(kind) or t.is_time64(kind) or t.is_date64(kind) or t.is_duration(kind):
        return 8
    if t.is_float32(kind):
        return 4
    if t.is_float64(kind):
        return 8
    if t.is_fixed_size_binary(kind):
        return kind.byte_width
    return None


@functools.lru_cache(maxsize=256)
def _is_binary(kind: Any) -> bool:
    import pyarrow as pa

    t = pa.types
    return t.is_string(kind) or t.is_binary(kind) or t.is_large_string(kind) or t.is_large_binary(kind)


def dictionary_pays(values: Any, page_bytes: int | None = None) -> bool:
    """PE1's test on one leaf's sampled ``values`` (a pyarrow Array): whether its
    dictionary-encoded size plus the dictionary's is below its plain size, over its
    non-null values up to ``page_bytes`` of plain values (at least one)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = values.type
    if isinstance(kind, pa.ExtensionType):
        values, kind = values.storage, kind.storage_type
    count = len(values) - values.null_count
    if count == 0 or pa.types.is_boolean(kind):
        return True
    if count == 1:  # d = 1: no index bits, and a dictionary as large as the value
        return _plain_width(kind) is None and not _is_binary(kind)
    if values.null_count:
        values = values.drop_null()
    if _is_binary(kind):
        lengths = pc.binary_length(values)
        plain = (pc.sum(lengths).as_py() or 0) + 4 * count
        if page_bytes is not None and plain > page_bytes:  # the first page's values only
            within = pc.sum(pc.less_equal(pc.cumulative_sum(pc.add(lengths, 4)), page_bytes)).as_py() or 0
            count = max(1, within)
            values = values.slice(0, count)
            plain = (pc.sum(lengths.slice(0, count)).as_py() or 0) + 4 * count
            if count == 1:
                return False
        distinct = pc.unique(values)
        dictionary = (pc.sum(pc.binary_length(distinct)).as_py() or 0) + 4 * len(distinct)
        n_distinct = len(distinct)
    else:
        width = _plain_width(kind)
        if width is None:
            return True
        if page_bytes is not None and width * count > page_bytes:  # the first page's values only
            count = max(1, page_bytes // width)
            values = values.slice(0, count)
            if count == 1:
                return False
        n_distinct = pc.count_distinct(values).as_py()
        plain = width * count
        dictionary = width * n_distinct
    encoded = -(-count * (n_distinct - 1).bit_length() // 8)
    return encoded + dictionary < plain


def leaf_columns(column: Any, path: str) -> list[tuple[str, Any]]:
    """The Parquet leaf columns of the arrow array ``column`` named ``path``: (their dotted
    path as pyarrow's writer names them, their values: nested values flattened, a
    struct's nulls applied to its fields)."""
    import pyarrow as pa

    kind = column.type
    if pa.types.is_struct(kind):
        children = column.flatten()
        return [leaf for i, child in enumerate(children)
                for leaf in leaf_columns(child, f"{path}.{kind.field(i).name}")]  # fmt: skip
    if pa.types.is_map(kind):  # its keys and items are the whole child arrays, not this slice's
        offsets = column.offsets
        start = offsets[0].as_py()
        end = offsets[-1].as_py()
        return (leaf_columns(column.keys.slice(start, end - start), f"{path}.key_value.key")
                + leaf_columns(column.items.slice(start, end - start), f"{path}.key_value.value"))  # fmt: skip
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        return leaf_columns(column.flatten(), f"{path}.list.element")
    return [(path, column)]


def delta_integers(properties: Any) -> bool:
    """PE3: whether a table of these properties opts into DELTA_BINARY_PACKED integers."""
    return str(properties.get(INTEGER_ENCODING, "plain")).strip().lower() == "delta"


@functools.lru_cache(maxsize=256)
def _integer_physical(kind: Any) -> bool:
    """PE3: whether the arrow type ``kind`` is stored as Parquet INT32 or INT64 here."""
    import pyarrow as pa

    t = pa.types
    if isinstance(kind, pa.ExtensionType):
        kind = kind.storage_type
    if t.is_decimal(kind):
        return kind.precision <= 18
    return (t.is_integer(kind) or t.is_date(kind) or t.is_time(kind) or t.is_timestamp(kind)
            or t.is_duration(kind))  # fmt: skip


def column_options(table: Any, sample: int, delta_integers: bool = False,
                   page_bytes: int | None = None) -> dict[str, Any]:  # fmt: skip
    """PE1, PE3 and PE4: the options of pyarrow's ``ParquetWriter`` for ``table`` (a
    pyarrow Table about to be written as one data file) beyond PyIceberg's:
    ``use_dictionary`` (the leaves whose dictionary pays on the first ``sample`` rows,
    at most ``page_bytes`` of plain values per leaf), with ``delta_integers``
    ``column_encoding`` (the integer leaves left without one), and
    ``write_page_index`` for a file of more than one page; empty when every leaf's
    dictionary pays and the file is one page (PE2)."""
    options: dict[str, Any] = {}
    if table.num_rows > PAGE_ROWS or (page_bytes is not None and table.nbytes > page_bytes):
        options["write_page_index"] = True
    head = table.slice(0, max(1, sample))
    keep: list[str] = []
    delta: dict[str, str] = {}
    plain = False
    for name, column in zip(head.column_names, head.columns):
        array = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
        for path, values in leaf_columns(array, name):
            if dictionary_pays(values, page_bytes):
                keep.append(path)
                continue
            plain = True
            if delta_integers and _integer_physical(values.type):
                delta[path] = "DELTA_BINARY_PACKED"
    if plain:
        options["use_dictionary"] = keep
    if delta:
        options["column_encoding"] = delta
    return options
