"""The exception hierarchy is the one PEP 249 prescribes, and every engine error sits in it."""

import inspect

import trinitylake_dbapi.errors as errors


def test_pep249_hierarchy() -> None:
    assert issubclass(errors.Warning, Exception)
    assert issubclass(errors.Error, Exception)
    assert not issubclass(errors.Warning, errors.Error)
    for name in ("InterfaceError", "DatabaseError"):
        assert getattr(errors, name).__bases__ == (errors.Error,)
    for name in (
        "DataError",
        "OperationalError",
        "IntegrityError",
        "InternalError",
        "ProgrammingError",
        "NotSupportedError",
    ):
        assert getattr(errors, name).__bases__ == (errors.DatabaseError,)


def test_every_error_has_its_own_stable_code() -> None:
    classes = [c for _, c in inspect.getmembers(errors, inspect.isclass) if issubclass(c, Exception)]
    codes = [c.code for c in classes]
    assert len(codes) == len(set(codes)), "two error classes share a code"
    for cls in classes:
        if cls is not errors.Warning:
            assert issubclass(cls, errors.Error), cls


def test_file_errors_name_the_file() -> None:
    err = errors.CorruptFileError("a/b.arrow", "not an Arrow file")
    assert "a/b.arrow" in str(err) and err.path == "a/b.arrow"
    assert isinstance(err, errors.DatabaseError)
    assert errors.MissingFileError("x.binpb").path == "x.binpb"
