"""What the TrinityLake dialect supports, for SQLAlchemy's dialect compliance suite.

TrinityLake stores namespaces (schemas), tables with columns, a primary key, comments
and rows (Iceberg data). The format has no foreign keys, indexes, unique or check
constraints, views, temporary tables, sequences or named constraints. Everything else
is SQLAlchemy's default. tests/sqlalchemy/suite runs the reflection, DDL, insert,
select, rowcount and results classes.
"""

from __future__ import annotations

from sqlalchemy.testing import exclusions
from sqlalchemy.testing.requirements import SuiteRequirements

_open = exclusions.open
_closed = exclusions.closed


class Requirements(SuiteRequirements):
    # -- what the format has ------------------------------------------------------
    schemas = property(lambda self: _open())
    schema_reflection = property(lambda self: _open())
    schema_create_delete = property(lambda self: _open())
    table_reflection = property(lambda self: _open())
    primary_key_constraint_reflection = property(lambda self: _open())
    comment_reflection = property(lambda self: _open())
    comment_reflection_full_unicode = property(lambda self: _open())
    reflect_table_options = property(lambda self: _open())  # an empty dict: no options
    table_ddl_if_exists = property(lambda self: _open())
    unbounded_varchar = property(lambda self: _open())
    create_table = property(lambda self: _open())
    drop_table = property(lambda self: _open())
    unicode_ddl = property(lambda self: _open())
    # Names may hold any character but controls and space (SPEC 3), so '"' is fine;
    # the suite's fixture names contain spaces, see QuotedNameArgumentTest in the suite.
    symbol_names_w_double_quote = property(lambda self: _open())

    # -- what it does not have ------------------------------------------------------
    reflects_pk_names = property(lambda self: _closed())  # a key is a list of column ids
    foreign_key_constraint_reflection = property(lambda self: _closed())
    cross_schema_fk_reflection = property(lambda self: _closed())
    foreign_key_constraint_name_reflection = property(lambda self: _closed())
    index_reflection = property(lambda self: _closed())
    index_ddl_if_exists = property(lambda self: _closed())
    unique_constraint_reflection = property(lambda self: _closed())
    check_constraint_reflection = property(lambda self: _closed())
    inline_check_constraint_reflection = property(lambda self: _closed())
    constraint_comment_reflection = property(lambda self: _closed())
    views = property(lambda self: _closed())
    view_reflection = property(lambda self: _closed())
    view_column_reflection = property(lambda self: _closed())
    materialized_views = property(lambda self: _closed())
    temporary_tables = property(lambda self: _closed())
    temp_table_reflection = property(lambda self: _closed())
    temp_table_names = property(lambda self: _closed())
    has_temp_table = property(lambda self: _closed())
    temporary_views = property(lambda self: _closed())
    sequences = property(lambda self: _closed())
    identity_columns = property(lambda self: _closed())
    computed_columns = property(lambda self: _closed())
    server_defaults = property(lambda self: _closed())
    autoincrement_insert = property(lambda self: _closed())
    autoincrement_without_sequence = property(lambda self: _closed())
    returning = property(lambda self: _closed())
    json_type = property(lambda self: _closed())
    column_collation_reflection = property(lambda self: _closed())
    denormalized_names = property(lambda self: _closed())
    default_schema_name_switch = property(lambda self: _closed())
    isolation_level = property(lambda self: _closed())
    autocommit = property(lambda self: _closed())
