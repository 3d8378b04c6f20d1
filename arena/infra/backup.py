"""Backups of an instance: the database, the image store and the instance's secrets in one
tar file, restored into a new instance.

SQLite: the database is copied with SQLite's online backup API, so a backup taken while the
server votes is consistent (a snapshot of committed transactions); images are written before
the rows that name them commit, so every image the copy refers to is in the image store when
it is read after the copy. PostgreSQL: the database part is ``pg_dump`` (the Deployment
page, Backups); this module refuses rather than pretend.

The file holds ``SECRET_KEY`` and ``PSEUDONYM_KEY`` (image names, cookies and export
pseudonyms depend on them): it is written private (0600) and must be kept like a password.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import sqlite3
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from flask import current_app

from arena.errors import Conflict, Invalid, Rejected
from arena.extensions import db
from arena.infra.storage import LocalStorage, get_storage

MANIFEST = "arena-backup.json"
DATABASE = "arena.sqlite3"
SECRETS = "config.py"
IMAGES = "images"
FORMAT = 1
COUNTED = ("vote", "image", "comparison", "voter", "model", "campaign", "hype_trial")


@dataclass(frozen=True)
class Summary:
    path: Path
    revision: str
    counts: dict[str, int]
    images: int
    bytes: int


def _sqlite_path() -> Path:
    if db.engine.dialect.name != "sqlite":
        raise Invalid("arena backup and restore handle SQLite instances; back up PostgreSQL "
                      "with pg_dump and the image folder with tar (see the Deployment page, "
                      "Backups)")
    return Path(db.engine.url.database)


def _describe(database: Path) -> tuple[str, dict[str, int]]:
    """The schema revision and row counts of a SQLite file."""
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as conn:
        revision = conn.execute("SELECT version_num FROM alembic_version").fetchone()[0]
        counts = {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                  for t in COUNTED}
    return revision, counts


def _image_dir() -> Path:
    """The image folder. Raises Invalid when the images are in a bucket (STORAGE_URL)."""
    storage = get_storage()
    if not isinstance(storage, LocalStorage):
        raise Invalid(f"the images are in {storage}, which arena backup and restore do not "
                      "copy: back the bucket up with the store's own tools (see the "
                      "deployment docs), or restore into an instance without STORAGE_URL "
                      "and then run `arena storage migrate`")
    return storage.root


def _image_files() -> list[Path]:
    image_dir = _image_dir()
    return sorted(p for p in image_dir.rglob("*") if p.is_file()) if image_dir.exists() else []


def image_count() -> int:
    """How many files the image store holds (what a backup will write, for progress)."""
    return len(_image_files())


def images_in(source: Path) -> int:
    """How many image files the backup ``source`` holds (0 when it cannot be read: the
    restore then says why)."""
    try:
        with tarfile.open(source) as tar:
            return sum(1 for name in tar.getnames() if name.startswith(f"{IMAGES}/"))
    except (OSError, tarfile.TarError):
        return 0


def backup(target: Path, progress=None) -> Summary:
    """Write a backup of this instance to ``target`` (a ``.tar``, or ``.tar.gz`` to
    compress it), atomically: an interrupted backup leaves no file behind.

    Raises
    ------
    Invalid
        Not a SQLite instance, or the images are in a bucket.
    """
    source = _sqlite_path()
    image_dir = _image_dir()
    images = _image_files()
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".arena-backup-") as tmp:
        copy = Path(tmp) / DATABASE
        with sqlite3.connect(source) as live, sqlite3.connect(copy) as snapshot:
            live.backup(snapshot)
        live.close()
        snapshot.close()
        revision, counts = _describe(copy)
        manifest = {"format": FORMAT, "revision": revision, "counts": counts,
                    "images": len(images),
                    "database_sha256": hashlib.sha256(copy.read_bytes()).hexdigest()}
        partial = Path(tmp) / "backup.part"
        with tarfile.open(partial, "w:gz" if target.name.endswith(".gz") else "w") as tar:
            data = json.dumps(manifest, indent=2).encode()
            info = tarfile.TarInfo(MANIFEST)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
            tar.add(copy, DATABASE)
            secrets = Path(current_app.instance_path) / SECRETS
            if secrets.exists():
                tar.add(secrets, SECRETS)
            for path in images:
                tar.add(path, f"{IMAGES}/{path.relative_to(image_dir).as_posix()}")
                if progress is not None:
                    progress(1)
        os.chmod(partial, 0o600)
        partial.replace(target)
    return Summary(target, revision, counts, len(images), target.stat().st_size)


def _member_target(name: str, image_dir: Path, instance: Path) -> Path | None:
    """Where a member of a backup goes, or None for the manifest and the database (handled
    apart). Raises Rejected for a name that is not one Arena writes (an absolute path, a
    ``..``, anything else): a backup is untrusted input."""
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts:
        raise Rejected(f"{name}: not a path inside the backup")
    if name in (MANIFEST, DATABASE):
        return None
    if name == SECRETS:
        return instance / SECRETS
    if path.parts[0] == IMAGES and len(path.parts) > 1:
        return image_dir.joinpath(*path.parts[1:])
    raise Rejected(f"{name}: not part of an Arena backup")


def _is_empty(database: Path) -> bool:
    if not database.exists() or database.stat().st_size == 0:
        return True
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "vote" not in tables:
            return True
        return not any(conn.execute(f"SELECT 1 FROM {t} LIMIT 1").fetchone()
                       for t in COUNTED if t in tables)


def _private_folder(folder: Path) -> None:
    """``folder`` made 0700, with every parent it lacks (mkdir's mode covers the last one
    only and is masked by the umask)."""
    missing = []
    while not missing or not missing[-1].exists():
        missing.append(missing[-1].parent if missing else folder)
    for made in reversed(missing[:-1]):
        made.mkdir(mode=0o700, exist_ok=True)
        os.chmod(made, 0o700)
    os.chmod(folder, 0o700)


def _private_file(path: Path):
    """``path`` opened for writing, created 0600 (never readable by others, not even
    briefly); an existing file is made 0600."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)
    return os.fdopen(fd, "wb")


def restore(source: Path, progress=None) -> Summary:
    """Restore the backup ``source`` into this instance, whose database must be empty (a new
    instance); then bring its schema to the newest migration. Checks the database against the
    manifest's checksum before anything is written.

    Raises
    ------
    Invalid
        Not a SQLite instance, or the images are in a bucket.
    Conflict
        This instance's database already holds data.
    Rejected
        Not a readable Arena backup, a damaged database, or a member outside the backup.
    """
    database = _sqlite_path()
    if not _is_empty(database):
        raise Conflict(f"the database {database} already holds data: restore into a new "
                       "instance (an empty ARENA_INSTANCE_PATH or ARENA_DATABASE_URL)")
    image_dir = _image_dir()
    instance = Path(current_app.instance_path)
    try:
        tar = tarfile.open(source)  # noqa: SIM115 (closed below)
    except (OSError, tarfile.TarError) as exc:
        raise Rejected(f"{source}: not a readable backup ({exc})") from exc
    for folder in (instance, database.parent):  # a new instance: its folders too
        _private_folder(folder)
    with tar, tempfile.TemporaryDirectory(dir=database.parent, prefix=".arena-restore-") as tmp:
        members = {m.name: m for m in tar.getmembers()}
        for member in members.values():
            if not member.isfile():
                raise Rejected(f"{member.name}: not a regular file")
            _member_target(member.name, image_dir, instance)
        if MANIFEST not in members or DATABASE not in members:
            raise Rejected(f"{source}: not an Arena backup (no {MANIFEST} or {DATABASE})")
        manifest = json.loads(tar.extractfile(members[MANIFEST]).read())
        if manifest.get("format") != FORMAT:
            raise Rejected(f"{source}: backup format {manifest.get('format')} is not {FORMAT}")
        staged = Path(tmp) / DATABASE
        with tar.extractfile(members[DATABASE]) as fh, staged.open("wb") as out:
            digest = hashlib.sha256()
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
                out.write(chunk)
        if digest.hexdigest() != manifest.get("database_sha256"):
            raise Rejected(f"{source}: the database in the backup is damaged (checksum)")
        written = 0
        for name, member in members.items():
            target = _member_target(name, image_dir, instance)
            if target is None:
                continue
            _private_folder(target.parent)
            with tar.extractfile(member) as fh, _private_file(target) as out:
                out.write(fh.read())
            if name.startswith(f"{IMAGES}/"):
                written += 1
                if progress is not None:
                    progress(1)
        if image_dir.exists():
            _private_folder(image_dir)
        db.session.remove()
        db.engine.dispose()  # (no pooled connection to the file being replaced)
        for suffix in ("-wal", "-shm", "-journal"):
            Path(f"{database}{suffix}").unlink(missing_ok=True)
        os.chmod(staged, 0o600)
        staged.replace(database)
    from arena.infra.instance import upgrade_schema

    upgrade_schema()
    revision, counts = _describe(database)
    return Summary(source, revision, counts, written, source.stat().st_size)
