"""Where image bytes live. One small interface; the local folder is the default.

A deployment on object storage implements the same five methods (``put``, ``open``,
``exists``, ``size``, ``delete``) over its bucket and sets
``app.extensions["arena_storage"]``; see README.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import BinaryIO, Protocol

from flask import current_app


class Storage(Protocol):
    def put(self, name: str, data: bytes) -> None: ...
    def open(self, name: str) -> BinaryIO: ...
    def exists(self, name: str) -> bool: ...
    def size(self, name: str) -> int: ...
    def delete(self, name: str) -> None: ...


class LocalStorage:
    """Files under ``root``, fanned out as ``ab/cd/<name>``; writes are atomic (temp + rename),
    so a crash never leaves a half-written image behind a valid name."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)

    def path(self, name: str) -> Path:
        if not name or "/" in name or "\\" in name or name.startswith("."):
            raise ValueError(f"invalid storage name {name!r}")
        return self.root / name[:2] / name[2:4] / name

    def put(self, name: str, data: bytes) -> None:
        target = self.path(name)
        if target.exists():
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def open(self, name: str) -> BinaryIO:
        return self.path(name).open("rb")

    def exists(self, name: str) -> bool:
        return self.path(name).exists()

    def size(self, name: str) -> int:
        return self.path(name).stat().st_size

    def delete(self, name: str) -> None:
        """Remove ``name`` if it is there."""
        self.path(name).unlink(missing_ok=True)


def get_storage() -> Storage:
    return current_app.extensions["arena_storage"]
