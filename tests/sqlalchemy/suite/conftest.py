"""SQLAlchemy's dialect compliance suite, with its pytest plugin active only here.

``sqlalchemy.testing.plugin.pytestplugin`` is written to be the root plugin of a run:
it drops every test that is not in a ``fixtures.TestBase`` class and sets up its engines
in ``pytest_addoption`` / ``pytest_configure`` / ``pytest_sessionstart``. Loaded from
the root it would break the rest of this repository's tests, so this conftest starts it
by hand and scopes it to this directory:

* ``pytest_configure`` (pytest calls it for a conftest registered late, during
  collection, as well as at startup) does what the plugin's option parsing,
  ``pytest_configure`` and ``pytest_sessionstart`` do: read setup.cfg ([sqla_testing],
  [db]), take the plugin's option defaults, set its fixture functions and create the
  engine (``trinitylake_sqlalchemy.provision`` creates the suite's namespaces);
* hooks pytest calls per directory (collect, runtest setup/call/teardown, logreport) and
  the plugin's fixtures are the plugin's own, imported here;
* the session-wide ``pytest_collection_modifyitems`` gets only this directory's items.

The engine's URL is ``[db] default`` in setup.cfg: a lakehouse in fsspec's memory
filesystem, so the suite writes no files.
"""

from __future__ import annotations

import argparse
import inspect
import os

import pytest
from sqlalchemy.dialects import registry

registry.register("trinitylake", "trinitylake_sqlalchemy.base", "TrinityLakeDialect")
registry.register(
    "trinitylake.trinitylake_dbapi", "trinitylake_sqlalchemy.base", "TrinityLakeDialect"
)

from sqlalchemy.testing.plugin import plugin_base  # noqa: E402
from sqlalchemy.testing.plugin import pytestplugin as _sqla  # noqa: E402

# Per-directory hooks and the fixtures the suite's classes use: the plugin's own.
from sqlalchemy.testing.plugin.pytestplugin import (  # noqa: E402, F401
    collect_types_fixture,
    pytest_pycollect_makeitem,
    pytest_runtest_call,
    pytest_runtest_logreport,
    pytest_runtest_setup,
    pytest_runtest_teardown,
    setup_class_methods,
    setup_test_methods,
)

_HERE = os.path.dirname(os.path.abspath(__file__))
_MARKERS = ("backend", "sparse_backend", "sparse_driver_backend", "memory_intensive",
            "timing_intensive", "mypy")  # fmt: skip
_started = False


def _default_options() -> argparse.Namespace:
    """The plugin's options with their default values (as if no option was given)."""
    parser = argparse.ArgumentParser(add_help=False)

    def make_option(name: str, **kw: object) -> None:
        if kw.pop("callback", None) is not None or kw.pop("zeroarg_callback", None) is not None:
            kw.pop("type", None)
            kw["action"] = "store_const" if "nargs" not in kw else "store"
            kw.setdefault("const", None)
        parser.add_argument(name, **kw)  # type: ignore[arg-type]

    plugin_base.setup_options(make_option)
    options = parser.parse_args([])
    options.dump_pyannotate = None
    return options


def pytest_configure(config: pytest.Config) -> None:
    global _started
    if _started:
        return
    _started = True
    for marker in _MARKERS:
        config.addinivalue_line("markers", f"{marker}: SQLAlchemy compliance suite marker")
    if inspect.signature(plugin_base.read_config).parameters:
        plugin_base.read_config(config.rootpath)
    else:  # SQLAlchemy 1.4 reads setup.cfg from the working directory
        cwd = os.getcwd()
        os.chdir(config.rootpath)
        try:
            plugin_base.read_config()
        finally:
            os.chdir(cwd)
    plugin_base.pre_begin(_default_options())
    plugin_base.set_coverage_flag(False)
    plugin_base.set_fixture_functions(_sqla.PytestFixtureFunctions)
    plugin_base.post_begin()


def _ours(item: pytest.Item) -> bool:
    return os.path.dirname(str(item.path)) == _HERE


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list) -> None:
    ours = [item for item in items if _ours(item)]
    if not ours:
        return
    _sqla.pytest_collection_modifyitems(session, config, ours)
    others = [item for item in items if not _ours(item)]
    items[:] = others + ours


def pytest_sessionfinish(session: pytest.Session) -> None:
    if _started:
        plugin_base.final_process_cleanup()
