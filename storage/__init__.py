"""SQLAlchemy storage: tables, repositories, engine setup and migrations."""
