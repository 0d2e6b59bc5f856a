"""The container image (Dockerfile, compose.yaml) holds the whole service: every package `pip install .` installs
from this tree is in what the Dockerfile copies, less what .dockerignore leaves out. An image missing one fails at
its first import. (No Docker engine runs here: this reads the build's inputs as Docker does.)"""

from __future__ import annotations

import fnmatch
import os
import shlex
import tomllib
from pathlib import Path

from setuptools import find_packages

ROOT = Path(__file__).resolve().parent.parent.parent


def ignored(relative: str, patterns: list[str]) -> bool:
    """Whether .dockerignore's `patterns` leave the path out: a pattern names the path or a folder above it; one
    that starts with `**/` names a file or folder at any depth."""
    parts = relative.split("/")
    prefixes = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    for pattern in patterns:
        if pattern.startswith("**/"):
            if any(fnmatch.fnmatchcase(part, pattern.removeprefix("**/")) for part in parts):
                return True
        elif any(fnmatch.fnmatchcase(prefix, pattern) for prefix in prefixes):
            return True
    return False


def copied(dockerfile: str, patterns: list[str]) -> set[str]:
    """The build context's files (paths relative to the tree) that the Dockerfile's COPY lines bring into the
    image."""
    sources: list[str] = []
    for line in dockerfile.splitlines():
        words = shlex.split(line, comments=True)
        if words and words[0].upper() == "COPY":
            sources += [word for word in words[1:-1] if not word.startswith("--")]
    files = set()
    for source in sources:
        base = ROOT / source
        if base.is_file():
            files.add(base.relative_to(ROOT).as_posix())
            continue
        for folder, folders, names in os.walk(base):
            here = Path(folder).relative_to(ROOT).as_posix()
            inside = "" if here == "." else f"{here}/"
            folders[:] = [name for name in folders if not ignored(inside + name, patterns)]
            files |= {inside + name for name in names if not ignored(inside + name, patterns)}
    return files


def test_the_image_holds_every_package_the_project_installs() -> None:
    include = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]["include"]
    packages = find_packages(where=str(ROOT), include=include)
    patterns = [line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines() if line.strip()]
    image = copied((ROOT / "Dockerfile").read_text(), patterns)

    assert {"signalyard", "gateway", "processors", "operations", "topics", "storage", "wire", "net"} <= set(packages)
    missing = [name for name in packages if f"{name.replace('.', '/')}/__init__.py" not in image]
    assert not missing, f"the image lacks these packages: {missing}"
    assert "pyproject.toml" in image
    assert any(name.startswith("storage/migrations/versions/") for name in image)
    assert not any(name.startswith(("tests/", "bench/", ".venv/", "node_modules/", ".git/")) for name in image)
