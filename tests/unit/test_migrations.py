"""The migrations' numbering, which the schema check reads instead of loading alembic (storage/common/db.py
`newest_revision`): each migration's revision is its file's number, and each revises the one numbered before it."""

from __future__ import annotations

from alembic.config import Config
from alembic.script import ScriptDirectory

from storage.common.db import MIGRATIONS, newest_revision


def scripts() -> ScriptDirectory:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return ScriptDirectory.from_config(config)


def test_the_newest_revision_is_alembics_one_head() -> None:
    assert scripts().get_heads() == [newest_revision()]


def test_each_migration_is_its_files_number_and_revises_the_one_before() -> None:
    found = {script.revision: script for script in scripts().walk_revisions()}
    numbers = sorted(found)
    assert numbers == [f"{n:04d}" for n in range(1, len(numbers) + 1)]
    for revision, script in found.items():
        assert script.path is not None
        assert script.path.rsplit("/", 1)[-1].startswith(f"{revision}_")
        assert script.down_revision == (None if revision == "0001" else f"{int(revision) - 1:04d}")
