"""Declarative models that survive SQLAlchemy's compliance suite in the same process.

The suite (tests/sqlalchemy/suite) calls ``orm.clear_mappers()`` after each of its test
classes, which unmaps every model of the process, module-level ones included; a test
module sharing its pytest-xdist worker then finds its classes unmapped. Such a module
declares its models in a function and maps them afresh for each test with
:func:`remap_each_test`."""

from __future__ import annotations

from typing import Any, Callable

import pytest


def remap_each_test(module_globals: dict[str, Any], declare: Callable[[], dict[str, Any]]) -> Any:
    """An autouse fixture that binds ``declare()``'s newly mapped classes to the module's
    names before each test. Assign it to a module-level name so pytest finds it."""

    @pytest.fixture(autouse=True)
    def mapped_models() -> None:
        module_globals.update(declare())

    return mapped_models
