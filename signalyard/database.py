"""Where the platform's database is: the configured URL, else the SQLite file in the data directory."""

from __future__ import annotations

from signalyard.settings import PlatformSettings
from storage.common.db import sqlite_url


def database_url(settings: PlatformSettings) -> str:
    if settings.database_url:
        return settings.database_url
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    return sqlite_url(settings.sqlite_path.resolve())
