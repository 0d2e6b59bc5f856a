"""Full-text search over the helpdesk's tickets (subject), conversations (body) and customers (name, email, phone),
its index kept by the database in the same transaction as the row (storage/helpdesk/search.py), and filled here for
the rows already there.

SQLite: a contentless FTS5 table `<table>_search` per table (words are runs of letters and digits, case-folded,
accents kept; a prefix index of 3 characters), kept by the triggers `<table>_search_insert|update|delete`. Its rowid
is the organization's number (`helpdesk_search_organizations`) times 2^32 plus the row's rowid, so that an
organization's rows are one range of the index, newest last: a search reads its own organization's range only.
PostgreSQL: a stored generated column `search_vector` (the 'simple' configuration over the text with everything but
letters and digits made spaces, as FTS5 splits it; a text's first 100,000 characters, as a tsvector holds at most 1
MB) with a GIN index `ix_<table>_search`, and an index of the organization's conversations newest first, from which a
common word's newest matches are taken.

These objects are outside the models (storage/helpdesk/models.py SEARCHED). A later migration that makes SQLite
copy one of these tables (a batch operation that recreates it) drops its triggers and renumbers its rowids: it must
create the triggers again and fill the index anew, as `_sqlite_upgrade` does (after `INSERT INTO
<table>_search(<table>_search) VALUES ('delete-all')`).

Revision ID: 0014
Revises: 0013
"""

from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

SEARCHED = {
    "helpdesk_tickets": ("subject",),
    "helpdesk_conversations": ("body",),
    "helpdesk_customers": ("name", "email", "phone"),
}
INDEXED_CHARACTERS = 100_000
"""Of a text, on PostgreSQL: a tsvector holds at most 1 MB, and an insert whose text made a larger one would fail."""
ROWS_PER_ORGANIZATION = 2**32
"""On SQLite, an index rowid is the organization's number times this, plus the row's rowid."""


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute(
            "CREATE TABLE helpdesk_search_organizations"
            " (number INTEGER PRIMARY KEY, organization_id VARCHAR(36) NOT NULL UNIQUE)"
        )
        for table, columns in SEARCHED.items():
            _sqlite_upgrade(table, columns)
    else:
        for table, columns in SEARCHED.items():
            _postgresql_upgrade(table, columns)
        op.execute(
            "CREATE INDEX ix_helpdesk_conversations_search_recent"
            " ON helpdesk_conversations (organization_id, created_at, id)"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for table in SEARCHED:
            for event in ("insert", "update", "delete"):
                op.execute(f"DROP TRIGGER {table}_search_{event}")
            op.execute(f"DROP TABLE {table}_search")
        op.execute("DROP TABLE helpdesk_search_organizations")
    else:
        op.execute("DROP INDEX ix_helpdesk_conversations_search_recent")
        for table in SEARCHED:
            op.execute(f"DROP INDEX ix_{table}_search")
            op.execute(f"ALTER TABLE {table} DROP COLUMN search_vector")


def _sqlite_upgrade(table: str, columns: tuple[str, ...]) -> None:
    index = f"{table}_search"
    names = ", ".join(columns)

    def rowid(row: str) -> str:
        number = f"(SELECT number FROM helpdesk_search_organizations WHERE organization_id = {row}.organization_id)"
        return f"{number} * {ROWS_PER_ORGANIZATION} + {row}.rowid"

    def values(row: str) -> str:
        return ", ".join(f"{row}.{column}" for column in columns)

    numbered = "INSERT OR IGNORE INTO helpdesk_search_organizations (organization_id) VALUES (new.organization_id);"
    add = f"INSERT INTO {index}(rowid, {names}) VALUES ({rowid('new')}, {values('new')});"
    # A contentless index forgets a row by being told the values it indexed: the row's old ones.
    forget = f"INSERT INTO {index}({index}, rowid, {names}) VALUES ('delete', {rowid('old')}, {values('old')});"
    changed = " OR ".join(f"old.{column} IS NOT new.{column}" for column in (*columns, "organization_id"))
    op.execute(
        f"CREATE VIRTUAL TABLE {index} USING fts5({names}, content='',"
        " tokenize='unicode61 remove_diacritics 0', prefix='3')"
    )
    op.execute(f"CREATE TRIGGER {index}_insert AFTER INSERT ON {table} BEGIN {numbered} {add} END")
    op.execute(f"CREATE TRIGGER {index}_delete AFTER DELETE ON {table} BEGIN {forget} END")
    op.execute(
        f"CREATE TRIGGER {index}_update AFTER UPDATE OF {names}, organization_id ON {table} WHEN {changed}"
        f" BEGIN {forget} {numbered} {add} END"
    )
    # The rows already there.
    op.execute(
        "INSERT OR IGNORE INTO helpdesk_search_organizations (organization_id)"
        f" SELECT DISTINCT organization_id FROM {table}"
    )
    op.execute(f"INSERT INTO {index}(rowid, {names}) SELECT {rowid(table)}, {values(table)} FROM {table}")


def _postgresql_upgrade(table: str, columns: tuple[str, ...]) -> None:
    text = " || ' ' || ".join(f"coalesce({column}, '')" for column in columns)
    # Everything but letters and digits becomes a space, so that the parser sees the words FTS5 sees: it would keep
    # `alice@example.com`, `555-0100` or `foo.bar` whole (an address, a signed number, a host).
    document = f"regexp_replace(left({text}, {INDEXED_CHARACTERS}), '[^[:alnum:]]+', ' ', 'g')"
    # Adding a stored generated column rewrites the table: this computes every existing row's vector.
    op.execute(
        f"ALTER TABLE {table} ADD COLUMN search_vector tsvector"
        f" GENERATED ALWAYS AS (to_tsvector('simple'::regconfig, {document})) STORED"
    )
    op.execute(f"CREATE INDEX ix_{table}_search ON {table} USING gin (search_vector)")
