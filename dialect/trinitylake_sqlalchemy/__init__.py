"""SQLAlchemy dialect ``trinitylake`` over the trinitylake_dbapi PEP 249 driver."""
