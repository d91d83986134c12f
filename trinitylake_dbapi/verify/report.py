"""The outcome of a verification: problems, each naming a file and the rule it breaks,
and the report that collects them (the rule names a problem can carry are here too)."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = [
    "ERROR", "WARNING", "RULES", "MAX_PER_FILE_AND_RULE", "Problem", "VerifyReport",
    "R_NAMES", "R_KEYS", "R_LAYOUT", "R_DEFINITION", "R_MAJOR", "R_HISTORY", "R_CATALOG",
    "R_ICEBERG", "R_MISSING", "R_ORPHAN",
]

ERROR = "error"
WARNING = "warning"

R_NAMES = "SPEC 2"
R_KEYS = "SPEC 3"
R_LAYOUT = "SPEC 4"
R_DEFINITION = "SPEC 5"
R_MAJOR = "SPEC 5 major_version"
R_HISTORY = "SPEC 7"
R_CATALOG = "K3"
R_ICEBERG = "SPEC 8"
R_MISSING = "missing"
R_ORPHAN = "orphan"
#: iceberg.keys PK6: two live rows of a keyed table hold one key (or a key is NULL).
R_PRIMARY_KEY = "primary key"
#: Every rule a problem can name.
RULES = (
    R_NAMES, R_KEYS, R_LAYOUT, R_DEFINITION, R_MAJOR, R_HISTORY, R_CATALOG, R_MISSING,
    R_ORPHAN, R_PRIMARY_KEY, "T1", "T2", "T3", "T4", "T5", "T6", "T7", "T8",
)

#: Problems reported per (file, rule) before the rest are summarised in one line.
MAX_PER_FILE_AND_RULE = 5


@dataclass(frozen=True)
class Problem:
    """One violation: the file it is in, the rule it breaks, and what is wrong."""

    path: str
    rule: str
    message: str
    severity: str = ERROR

    def __str__(self) -> str:
        return f"{self.severity.upper()} [{self.rule}] {self.path}: {self.message}"


@dataclass
class VerifyReport:
    """The outcome of :func:`verify`. ``ok`` is True when there is no error (warnings,
    e.g. orphan files, do not make a lakehouse invalid)."""

    location: str
    all_versions: bool
    latest_version: int | None = None
    versions: list[int] = field(default_factory=list)  # every root found, ascending
    problems: list[Problem] = field(default_factory=list)
    orphans: list[str] = field(default_factory=list)
    files_listed: int = 0
    roots_read: int = 0
    nodes_read: int = 0
    definitions_read: int = 0
    extra_reads: int = 0

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == ERROR]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == WARNING]

    @property
    def ok(self) -> bool:
        return not self.errors

    def summary(self) -> str:
        versions = (
            f"versions {self.versions[0]}..{self.versions[-1]} ({len(self.versions)} roots)"
            if self.versions else "no versions"
        )
        return (
            f"{'OK' if self.ok else 'INVALID'}: {self.location}: {versions}, "
            f"{self.nodes_read} nodes, {self.definitions_read} definition files read; "
            f"{len(self.errors)} errors, {len(self.warnings)} warnings, "
            f"{len(self.orphans)} orphan files"
        )

    def text(self) -> str:
        """The report as lines of text: every problem, then the summary."""
        return "\n".join([*map(str, self.problems), self.summary()])
