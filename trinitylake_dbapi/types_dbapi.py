"""PEP 249 type objects and constructors.

A result column's type code (``cursor.description[i][1]``) is the canonical TrinityLake
type kind of SPEC 5 (``"varchar"``, ``"int8"``, ``"timestamp"``, ...; see
:data:`trinitylake_dbapi.format.types.KINDS`). Each type object compares equal to the
kinds of its group, so ``description[i][1] == STRING`` works as PEP 249 asks.
"""

from __future__ import annotations

import datetime
import time

__all__ = [
    "DBAPITypeObject",
    "STRING",
    "BINARY",
    "NUMBER",
    "DATETIME",
    "ROWID",
    "Date",
    "Time",
    "Timestamp",
    "DateFromTicks",
    "TimeFromTicks",
    "TimestampFromTicks",
    "Binary",
]


class DBAPITypeObject:
    """A PEP 249 type object: equal to every type code (kind name) of its group."""

    def __init__(self, name: str, *kinds: str) -> None:
        self.name = name
        self.kinds = frozenset(kinds)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, DBAPITypeObject):
            return self is other
        if isinstance(other, str):
            return other in self.kinds
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    def __hash__(self) -> int:
        return hash((DBAPITypeObject, self.name))

    def __repr__(self) -> str:
        return f"<DBAPITypeObject {self.name}: {', '.join(sorted(self.kinds))}>"


STRING = DBAPITypeObject("STRING", "char", "varchar")
BINARY = DBAPITypeObject("BINARY", "binary", "fixed")
NUMBER = DBAPITypeObject("NUMBER", "int2", "int4", "int8", "decimal", "float4", "float8")
DATETIME = DBAPITypeObject("DATETIME", "date", "time", "timetz", "timestamp", "timestamptz")
#: TrinityLake has no row ids; no type code equals ROWID.
ROWID = DBAPITypeObject("ROWID")

Date = datetime.date
Time = datetime.time
Timestamp = datetime.datetime
Binary = bytes


def DateFromTicks(ticks: float) -> datetime.date:  # noqa: N802 - name fixed by PEP 249
    return Date(*time.localtime(ticks)[:3])


def TimeFromTicks(ticks: float) -> datetime.time:  # noqa: N802 - name fixed by PEP 249
    return Time(*time.localtime(ticks)[3:6])


def TimestampFromTicks(ticks: float) -> datetime.datetime:  # noqa: N802 - name fixed by PEP 249
    return Timestamp(*time.localtime(ticks)[:6])
