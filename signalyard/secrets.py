"""Secrets the launcher keeps: keys from settings, or on a machine with nothing configured, random ones created once
in the data directory (every process started by `signalyard up` shares that directory, and so the keys)."""

from __future__ import annotations

import secrets
from pathlib import Path

from cryptography.fernet import Fernet, MultiFernet

from signalyard.settings import PlatformSettings


def read(path: Path) -> str | None:
    return path.read_text().strip() if path.exists() else None


def keep(path: Path, secret: str) -> None:
    """Write a secret readable by its owner only."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch(mode=0o600)
    path.write_text(secret + "\n")


def kept(data_dir: Path, name: str, new: str | None = None) -> str:
    """The secret kept as `name` in the data directory, created (random, or `new`) on first use."""
    path = data_dir / "secrets" / name
    if (secret := read(path)) is None:
        secret = new or secrets.token_urlsafe(32)
        keep(path, secret)
    return secret


def secrets_cipher(settings: PlatformSettings) -> MultiFernet:
    """Seals the secrets the services store (webhook signing secrets, inbound channels' provider secrets:
    storage/common/secrets.py). The first of SIGNALYARD_SECRET_KEYS seals; all of them open, so a key is rotated by
    putting the new one first. Unset: one random key kept in the data directory (under the name it had when it
    sealed webhook secrets alone)."""
    keys = settings.secret_keys or [kept(settings.data_dir, "webhook-secret-key", Fernet.generate_key().decode())]
    return MultiFernet([Fernet(key) for key in keys])
