"""Errors shaped as PyIceberg's SqlCatalog raises them, for code written against it.

PyIceberg's SqlCatalog (and its InMemoryCatalog, a SqlCatalog over SQLite) keeps
namespace properties in a table whose name and value columns are NOT NULL, so a
property whose name or value is None fails in its database, as SQLAlchemy's
``sqlalchemy.exc.IntegrityError``. Code and tests written for those catalogs catch that
class; code written for a PEP 249 driver catches ``IntegrityError`` of the driver.

Rules:

  SQ1 :class:`NullPropertyError` is both: this package's PEP 249 ``IntegrityError``
      (code ``integrity_error``, the class SQL's NOT NULL rule raises too) and
      SQLAlchemy's ``sqlalchemy.exc.IntegrityError``, whose ``orig`` (the DB-API error
      SQLAlchemy wraps) is the error itself. Its message is the catalog's own, without
      SQLAlchemy's statement and link decoration. This module imports SQLAlchemy (a
      dependency of this distribution, for the dialect); the catalog imports it only
      when it meets a null property (iceberg.catalog P14), so the catalog-only path
      never loads SQLAlchemy.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.exc import IntegrityError as SQLAlchemyIntegrityError

from ..errors import IntegrityError

__all__ = ["NullPropertyError"]


class NullPropertyError(IntegrityError, SQLAlchemyIntegrityError):
    """A namespace property whose name or value is None (SQ1)."""

    code = IntegrityError.code  # the PEP 249 class's stable code, not SQLAlchemy's error code

    def __init__(self, message: str) -> None:
        self.message = message
        # statement and parameters: none (no SQL ran); orig: the DB-API error, this one
        SQLAlchemyIntegrityError.__init__(self, None, None, self)  # type: ignore[arg-type]
        self.args = (message,)

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.message,))
