"""The statements of TrinityLake SQL: one typed node per statement kind.

The parser (:mod:`.parser`) turns text into exactly one of these nodes, or into a query
(``exp.Query``: ``SELECT`` / ``WITH``); :mod:`.binding` replaces the parameters in them
and :mod:`.execute` runs each kind with one handler. Each node is an sqlglot expression,
so ``transform`` (parameter binding) walks into its values like into any other node, and
``arg_types`` names what the statement holds.

A new statement is a class here, a handler in the parser's table
(``TrinityLakeParser.TL_STATEMENTS``) and one in :mod:`.execute`.
"""

from __future__ import annotations

import typing as t

from sqlglot import exp

__all__ = [
    "Statement",
    "CreateNamespace",
    "AlterNamespace",
    "DropNamespace",
    "ShowNamespaces",
    "DescribeNamespace",
    "CreateTable",
    "PartitionField",
    "AddColumns",
    "AddPartitionField",
    "DropPartitionField",
    "DropColumn",
    "RenameColumn",
    "RenameTable",
    "SetTableProperties",
    "UnsetTableProperties",
    "AlterColumn",
    "DropTable",
    "CommentOn",
    "ShowTables",
    "DescribeTable",
    "ShowCreateTable",
    "ShowPartitions",
    "ShowVersions",
    "UseNamespace",
    "Begin",
    "CommitWork",
    "RollbackWork",
    "RollbackToVersion",
    "ExportSnapshot",
    "ExpireVersions",
    "OptimizeTable",
    "ExpireSnapshots",
    "LAKEHOUSE_STATEMENTS",
    "SUPPORTED",
]


class Statement(exp.Expression):
    """Base of the statements this dialect adds (queries stay ``exp.Query``)."""

    #: The statement's name in messages, e.g. "CREATE NAMESPACE".
    title: t.ClassVar[str] = ""
    #: Whether the statement changes the lakehouse (refused on read-only connections
    #: before anything is touched).
    writes: t.ClassVar[bool] = False


class CreateNamespace(Statement):
    title = "CREATE NAMESPACE"
    writes = True
    arg_types = {"this": True, "exists": False, "comment": False, "properties": False}


class AlterNamespace(Statement):
    title = "ALTER NAMESPACE"
    writes = True
    # set_properties: [exp.Property]; unset_properties: [key expressions]
    arg_types = {"this": True, "set_properties": False, "unset_properties": False}


class DropNamespace(Statement):
    title = "DROP NAMESPACE"
    writes = True
    arg_types = {"this": True, "exists": False, "cascade": False}


class ShowNamespaces(Statement):
    title = "SHOW NAMESPACES"
    arg_types = {"like": False, "version": False}


class DescribeNamespace(Statement):
    title = "DESCRIBE NAMESPACE"
    arg_types = {"this": True, "version": False}


class CreateTable(Statement):
    title = "CREATE TABLE"
    writes = True
    # columns: [exp.ColumnDef]; primary_key: [exp.Identifier]; properties: [exp.Property]
    arg_types = {
        "this": True,
        "exists": False,
        "columns": True,
        "primary_key": False,
        "using": False,
        "comment": False,
        "properties": False,
        "location": False,
        "external": False,
        "query": False,  # CREATE TABLE ... AS <query>: the columns come from the query
        "partitioned_by": False,  # [PartitionField]
    }


class PartitionField(exp.Expression):
    """One field of PARTITIONED BY / ADD / DROP PARTITION FIELD (iceberg.partitioning
    PT1): ``this`` the transform's word (an Identifier; ``identity`` for a bare column),
    ``column`` an Identifier, ``argument`` a bucket count or truncate width (a number
    Literal), ``alias`` the field's name (an Identifier)."""

    arg_types = {"this": True, "column": True, "argument": False, "alias": False}


class AddPartitionField(Statement):
    title = "ALTER TABLE ADD PARTITION FIELD"
    writes = True
    arg_types = {"this": True, "field": True}


class DropPartitionField(Statement):
    title = "ALTER TABLE DROP PARTITION FIELD"
    writes = True
    arg_types = {"this": True, "field": True}


class AddColumns(Statement):
    title = "ALTER TABLE ADD COLUMNS"
    writes = True
    arg_types = {"this": True, "columns": True}


class DropColumn(Statement):
    title = "ALTER TABLE DROP COLUMN"
    writes = True
    arg_types = {"this": True, "column": True}


class RenameColumn(Statement):
    title = "ALTER TABLE RENAME COLUMN"
    writes = True
    arg_types = {"this": True, "old": True, "new": True}


class RenameTable(Statement):
    title = "ALTER TABLE RENAME TO"
    writes = True
    arg_types = {"this": True, "to": True}


class SetTableProperties(Statement):
    title = "ALTER TABLE SET TBLPROPERTIES"
    writes = True
    arg_types = {"this": True, "properties": True}


class UnsetTableProperties(Statement):
    title = "ALTER TABLE UNSET TBLPROPERTIES"
    writes = True
    arg_types = {"this": True, "keys": True, "exists": False}


class AlterColumn(Statement):
    """ALTER TABLE t ALTER COLUMN c SET NOT NULL | DROP NOT NULL | COMMENT '..'."""

    title = "ALTER TABLE ALTER COLUMN"
    writes = True
    # nullable: True/False when changed; comment: an expression when changed
    arg_types = {"this": True, "column": True, "nullable": False, "comment": False}


class DropTable(Statement):
    title = "DROP TABLE"
    writes = True
    arg_types = {"this": True, "exists": False}


class CommentOn(Statement):
    """COMMENT ON NAMESPACE n | TABLE n.t | COLUMN n.t.c IS '..' | NULL."""

    title = "COMMENT ON"
    writes = True
    # kind: "NAMESPACE" | "TABLE" | "COLUMN"; this: Identifier | Table; column: Identifier
    arg_types = {"kind": True, "this": True, "column": False, "comment": True}


class ShowTables(Statement):
    title = "SHOW TABLES"
    arg_types = {"namespace": False, "like": False, "version": False}


class DescribeTable(Statement):
    title = "DESCRIBE TABLE"
    arg_types = {"this": True, "version": False, "extended": False}


class ShowCreateTable(Statement):
    title = "SHOW CREATE TABLE"
    arg_types = {"this": True, "version": False}


class ShowPartitions(Statement):
    title = "SHOW PARTITIONS"
    arg_types = {"this": True, "version": False}


class ShowVersions(Statement):
    title = "SHOW VERSIONS"
    arg_types: t.ClassVar[dict[str, bool]] = {"limit": False}


class UseNamespace(Statement):
    title = "USE"
    arg_types = {"this": True}


class Begin(Statement):
    title = "BEGIN"
    # isolation: "SNAPSHOT" | "SERIALIZABLE" | None
    arg_types = {"isolation": False}


class CommitWork(Statement):
    title = "COMMIT"
    arg_types: t.ClassVar[dict[str, bool]] = {}


class RollbackWork(Statement):
    title = "ROLLBACK"
    arg_types: t.ClassVar[dict[str, bool]] = {}


class RollbackToVersion(Statement):
    title = "ROLLBACK TO VERSION"
    writes = True
    arg_types = {"this": True}


class ExportSnapshot(Statement):
    title = "EXPORT SNAPSHOT"
    writes = True
    arg_types = {"this": True, "version": False}


class ExpireVersions(Statement):
    title = "EXPIRE VERSIONS"
    writes = True
    arg_types = {"retain": False, "older_than": False, "dry_run": False}


class OptimizeTable(Statement):
    """OPTIMIZE [TABLE] t (Delta Lake, Databricks) and ALTER TABLE t EXECUTE optimize
    (Trino): compaction (iceberg.compaction CP1-CP5), one replace commit."""

    title = "OPTIMIZE"
    writes = True
    arg_types = {"this": True}


class ExpireSnapshots(Statement):
    """ALTER TABLE t EXECUTE expire_snapshots[(older_than => ts, retain_last => n)]
    (Trino's table procedure, Spark's ``expire_snapshots`` arguments): the table's
    Iceberg snapshots its retention no longer keeps are dropped (iceberg.retention)."""

    title = "EXPIRE SNAPSHOTS"
    writes = True
    arg_types = {"this": True, "older_than": False, "retain_last": False}


#: Statements that act on the lakehouse directly, each its own commit.
LAKEHOUSE_STATEMENTS = (RollbackToVersion, ExportSnapshot, ExpireVersions)

#: The statements TrinityLake SQL supports, as an error message lists them.
SUPPORTED = (
    "CREATE/ALTER/DROP NAMESPACE, SHOW NAMESPACES, DESCRIBE NAMESPACE, CREATE/ALTER/DROP "
    "TABLE, SHOW TABLES, DESCRIBE TABLE, SHOW CREATE TABLE, SHOW PARTITIONS, COMMENT ON, USE, BEGIN, COMMIT, "
    "ROLLBACK, ROLLBACK TO VERSION, SHOW VERSIONS, EXPORT SNAPSHOT, EXPIRE VERSIONS, SELECT, "
    "INSERT, UPDATE, DELETE, MERGE, OPTIMIZE"
)
