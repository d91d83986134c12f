"""PyIceberg's own catalog behaviour tests through RestCatalog against ``trinitylake serve``.

The same released suite as tests/iceberg/test_pyiceberg_behaviors.py (PyIceberg's
source distribution, obtained at test time, run unmodified in a child pytest), with
``pyiceberg_rest_behaviors_conftest.py`` as its catalog fixtures: PyIceberg's RestCatalog
over HTTP to the server application (on a thread of the child, a fresh lakehouse per
test, a bearer token). Every test passes except the in-process run's exceptions and
those in ``REST_CLIENT``, which fail inside PyIceberg's RestCatalog itself, whatever the
server answers; each REST_CLIENT behaviour is checked over plain HTTP by a test of
tests/server/test_rest.py instead (named beside it).

Measured 2026-11-27: 224 of 237 pass (86 of 95 single-level, 138 of 142 multi-level);
in process 236 of 237 (94, 142). Of the 13 failures, 1 is the in-process EXCEPTED one
and 12 are REST_CLIENT's, so the REST count is the in-process count less exactly the
REST_CLIENT tests. (Before write.metadata.path was honoured inside the root, iceberg
tables M6: 218 and 230; before server RS10 let write.metadata.delete-after-commit
through: 217 and 229. Before that: 217 through REST, 226 in process, 9 REST_CLIENT; the
null properties test then failed in both runs, and passes in process since iceberg P14.)
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.iceberg.test_pyiceberg_behaviors import EXCEPTED, check_level, run_suite

# Slow: PyIceberg's catalog suite, run in a process through the server (scripts/test
# --quick leaves it out).
pytestmark = pytest.mark.slow

OVERRIDE = Path(__file__).with_name("pyiceberg_rest_behaviors_conftest.py")

#: Tests whose expectation PyIceberg's RestCatalog cannot meet against any server, each
#: checked in PyIceberg 0.12.0's code (line numbers of that release) and covered over plain
#: HTTP by the test of tests/server/test_rest.py named in brackets: 12 tests.
REST_CLIENT = {
    "test_create_table_without_namespace": (
        "expects NoSuchNamespaceError; pyiceberg/catalog/rest/__init__.py:902 create_table -> "
        "_split_identifier_for_path -> _identifier_to_validated_tuple (:746-747) raises "
        "NoSuchIdentifierError (not a subclass) for a one-part identifier before any request is "
        "sent [test_a_table_in_a_missing_or_empty_namespace_is_refused]"),
    "test_create_namespace_with_empty_identifier": (
        "expects NoSuchNamespaceError; rest/__init__.py:1295 create_namespace passes only {409: "
        "NamespaceAlreadyExistsError} to _handle_non_200_response, which (rest/response.py:72-93) "
        "makes any other status BadRequestError (400), RESTError (404, 422) or another generic "
        "class; the server answers 400 for an empty or blank level (the () parameter passes: "
        "refused client-side, :626-627) [test_create_namespace_refuses_an_empty_or_blank_level_with_400]"),
    "test_commit_table": (
        "calls catalog._parse_metadata_version, a static method of MetastoreCatalog "
        "(pyiceberg/catalog/__init__.py:1118); RestCatalog derives from Catalog only "
        "(rest/__init__.py:405): AttributeError "
        "[test_a_commit_numbers_the_next_metadata_file_and_logs_the_previous]"),
    "test_create_namespace_with_null_properties": (
        "expects sqlalchemy.exc.IntegrityError, which RestCatalog never raises (its errors come from "
        "_handle_non_200_response, rest/response.py:72-93; in process iceberg P14 raises it), and "
        "its first call cannot even reach the server as a null name: create_namespace posts the "
        "properties with requests' json= (rest/__init__.py:1290-1291, requests/models.py:592 "
        "json.dumps), which renders the key None as the string \"null\", a valid name; a null value "
        "is 400 (server RS11), BadRequestError in RestCatalog "
        "[test_a_null_namespace_property_is_400_and_creates_nothing]"),
}


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, str]]:
    return run_suite(OVERRIDE, tmp_path_factory.mktemp("pyiceberg-rest-suite"))


def test_single_level_through_rest(outcomes: dict[str, tuple[str, str]]) -> None:
    check_level(outcomes, "single", {**EXCEPTED, **REST_CLIENT})


def test_multi_level_through_rest(outcomes: dict[str, tuple[str, str]]) -> None:
    check_level(outcomes, "multi", {**EXCEPTED, **REST_CLIENT})


def test_rest_client_exceptions_exist_and_fail(outcomes: dict[str, tuple[str, str]]) -> None:
    """REST_CLIENT names tests the suite has, each of which still fails (one that passes
    now belongs to the checked tests)."""
    for name in REST_CLIENT:
        states = {state for test, (state, _) in outcomes.items() if test.split("[")[0] == name}
        assert states, f"{name} is not in the suite any more"
        assert "failed" in states, f"{name} passes now: remove it from REST_CLIENT"


def test_each_rest_client_exception_is_covered_over_http() -> None:
    """Each REST_CLIENT entry names, in brackets, the test of tests/server/test_rest.py
    that checks the same behaviour over plain HTTP; that test exists."""
    from tests.server import test_rest

    for name, reason in REST_CLIENT.items():
        covered = re.findall(r"\[(test_\w+)\]", reason)
        assert covered, f"{name}: no covering test named"
        for test in covered:
            assert callable(getattr(test_rest, test, None)), f"{name}: {test} is not in tests/server/test_rest.py"
