"""The one exception hierarchy of trinitylake-dbapi.

PEP 249 names the public classes (``Error`` and its subclasses). The engine's layers
raise the precise subclasses defined below, each of which *is* a PEP 249 class, so the
mapping from an internal failure to the DB-API category is made exactly once, here, by
inheritance. Every class has a stable ``code`` that programs can match on instead of
parsing messages.

Messages say what was wrong and name the object, file or SQL position.
"""

from __future__ import annotations

import builtins


class Warning(builtins.Exception):  # noqa: A001 - the name is fixed by PEP 249
    """Important warnings, e.g. data truncations (PEP 249)."""

    code = "warning"


class Error(builtins.Exception):
    """Base class of every error this package raises (PEP 249)."""

    code = "error"


class InterfaceError(Error):
    """Misuse of the driver itself, e.g. a closed cursor (PEP 249)."""

    code = "interface_error"


class DatabaseError(Error):
    """Errors related to the lakehouse (PEP 249)."""

    code = "database_error"


class DataError(DatabaseError):
    """Problems with processed data, e.g. a value out of range (PEP 249)."""

    code = "data_error"


class OperationalError(DatabaseError):
    """Errors of the lakehouse's operation, not the programmer's (PEP 249)."""

    code = "operational_error"


class IntegrityError(DatabaseError):
    """Relational integrity would be broken (PEP 249)."""

    code = "integrity_error"


class InternalError(DatabaseError):
    """The lakehouse is in an inconsistent state (PEP 249)."""

    code = "internal_error"


class ProgrammingError(DatabaseError):
    """Bad SQL, wrong parameters, missing or duplicate objects (PEP 249)."""

    code = "programming_error"


class NotSupportedError(DatabaseError):
    """A method or statement that TrinityLake does not support (PEP 249)."""

    code = "not_supported"


# ---------------------------------------------------------------------------
# Precise errors raised by the engine's layers.
# ---------------------------------------------------------------------------


class InvalidLocationError(ProgrammingError):
    """A root URI or relative path that is not qualified (SPEC 2)."""

    code = "invalid_location"


class SQLSyntaxError(ProgrammingError):
    """SQL that does not parse. ``line`` and ``column`` (1-based) locate the offending
    ``text``; the message shows all three."""

    code = "syntax_error"

    def __init__(self, message: str, *, line: int, column: int, text: str) -> None:
        super().__init__(message)
        self.line = line
        self.column = column
        self.text = text


class InvalidNameError(ProgrammingError):
    """An object name that breaks SPEC 3 (empty, forbidden bytes, too long)."""

    code = "invalid_name"


class InvalidDefinitionError(ProgrammingError):
    """An object definition that cannot be stored, e.g. an unknown column type."""

    code = "invalid_definition"


class ObjectNotFoundError(ProgrammingError):
    """A namespace, table, column, version or snapshot that does not exist."""

    code = "not_found"


class ObjectExistsError(ProgrammingError):
    """Creating an object that already exists."""

    code = "already_exists"


class ObjectNotEmptyError(ProgrammingError):
    """Dropping a namespace that still holds tables without CASCADE."""

    code = "not_empty"


class ReadOnlyError(ProgrammingError):
    """A write on a read-only (time travel) connection or transaction."""

    code = "read_only"


class CorruptFileError(DatabaseError):
    """A file of the lakehouse breaks the format; ``path`` names it."""

    code = "corrupt_file"

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"corrupt file {path!r}: {reason}")
        self.path = path
        self.reason = reason


class UnsupportedFormatError(DatabaseError):
    """A lakehouse written with a format major version this package cannot read."""

    code = "unsupported_format"


class StorageError(OperationalError):
    """A storage call failed (I/O error, network, permissions)."""

    code = "storage_error"


class MissingFileError(StorageError):
    """A file that must exist is missing; ``path`` names it."""

    code = "missing_file"

    def __init__(self, path: str, reason: str = "file does not exist") -> None:
        super().__init__(f"{path!r}: {reason}")
        self.path = path


class CommitOutcomeUnknownError(StorageError):
    """Creating a commit's root failed and reading it back failed too: the commit may
    have happened. Reopen the lakehouse to see, before retrying."""

    code = "commit_outcome_unknown"


class QueryCanceledError(OperationalError):
    """The statement was stopped by ``Connection.interrupt()`` or its statement timeout;
    it wrote nothing."""

    code = "query_canceled"


class QueryTooLargeError(OperationalError):
    """A query would hold more rows than the connection's ``max_query_rows`` (a join
    that multiplies, a result too large to hold in memory)."""

    code = "query_too_large"


class SerializationError(OperationalError):
    """A concurrent commit conflicts with this transaction; retry it."""

    code = "serialization_failure"


class CommitFailedError(OperationalError):
    """A commit could not be published; the lakehouse is unchanged."""

    code = "commit_failed"


__all__ = [
    "Warning",
    "Error",
    "InterfaceError",
    "DatabaseError",
    "DataError",
    "OperationalError",
    "IntegrityError",
    "InternalError",
    "ProgrammingError",
    "NotSupportedError",
    "InvalidLocationError",
    "SQLSyntaxError",
    "InvalidNameError",
    "InvalidDefinitionError",
    "ObjectNotFoundError",
    "ObjectExistsError",
    "ObjectNotEmptyError",
    "ReadOnlyError",
    "CorruptFileError",
    "UnsupportedFormatError",
    "StorageError",
    "MissingFileError",
    "CommitOutcomeUnknownError",
    "QueryCanceledError",
    "QueryTooLargeError",
    "SerializationError",
    "CommitFailedError",
]
