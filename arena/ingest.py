"""Ingestion: the one path by which generations enter the arena (web page, API and CLI).

Each file is decoded and checked by :func:`arena.images.decode`, re-encoded and stored under
its content hash, attached to a prompt, and the comparisons it makes possible in the published
campaigns its model takes part in are added.
A batch keeps the good files and reports the bad ones, each with its reason.
"""

from __future__ import annotations

import csv
import io
import re
import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from flask import current_app
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from . import campaigns, images
from .extensions import db
from .models import GenModel, Image, Prompt

FILENAME = re.compile(r"^(\d+)_(\d+)\.[A-Za-z]+$")  # <prompt_id>_<n>.png


@dataclass
class IngestResult:
    filename: str
    ok: bool
    reason: str | None = None
    image_id: int | None = None
    sha256: str | None = None
    prompt_id: int | None = None
    duplicate: bool = False

    def as_dict(self) -> dict:
        return asdict(self)


class ManifestError(ValueError):
    """An unusable manifest or archive; the message names the line or member."""


def prompt_id_from_filename(filename: str) -> int | None:
    match = FILENAME.match(Path(filename).name)
    return int(match.group(1)) if match else None


def ingest_image(model: GenModel, prompt_id, data: bytes | str, filename: str
                 ) -> IngestResult:
    """Validate, store and attach one image to ``prompt_id`` for ``model``; commits.

    ``data`` is the file's bytes, or a string saying why the file could not be read.
    Never raises for bad input: the result says what was wrong.
    """
    if isinstance(data, str):
        return IngestResult(filename, False, data)
    try:
        prompt_id = int(prompt_id)
    except (TypeError, ValueError):
        return IngestResult(filename, False, "prompt_id must be a prompt's number")
    prompt = db.session.get(Prompt, prompt_id)
    if prompt is None:
        return IngestResult(filename, False, f"no prompt {prompt_id}", prompt_id=prompt_id)
    try:
        decoded = images.decode(data, filename=filename)
    except images.ImageRejected as exc:
        return IngestResult(filename, False, str(exc), prompt_id=prompt_id)
    limit = current_app.config["IMAGES_PER_PROMPT"]
    have = db.session.scalar(select(func.count()).select_from(Image).where(
        Image.model_id == model.id, Image.prompt_id == prompt_id))
    if have >= limit:  # checked before anything is written
        return IngestResult(filename, False, f"{model.name} already has {limit} images for "
                            f"prompt {prompt_id}", prompt_id=prompt_id)
    row, created = images.store_new(decoded, model_id=model.id, prompt_id=prompt_id)
    if not created:
        db.session.rollback()
        if row.model_id == model.id and row.prompt_id == prompt_id:
            return IngestResult(filename, True, "identical image already uploaded",
                                image_id=row.id, sha256=row.sha256, prompt_id=prompt_id,
                                duplicate=True)
        return IngestResult(filename, False, "this exact image is already in the arena "
                            "for another model or prompt", prompt_id=prompt_id)
    try:
        db.session.flush()
        campaigns.on_new_image(model.id, prompt_id)
        db.session.commit()
    except IntegrityError:
        # the same bytes arrived in a concurrent request and won the unique hash
        db.session.rollback()
        return IngestResult(filename, False, "identical image uploaded at the same moment; "
                            "retry to see which one was kept", prompt_id=prompt_id)
    return IngestResult(filename, True, image_id=row.id, sha256=row.sha256, prompt_id=prompt_id)


def ingest_batch(model: GenModel, items: Iterable[tuple[str, object, bytes | str]],
                 progress: Callable[[IngestResult], None] | None = None) -> list[IngestResult]:
    """Ingest (filename, prompt_id, bytes) items one by one; a bad file never stops the rest."""
    results = []
    for filename, prompt_id, data in items:
        result = ingest_image(model, prompt_id, data, filename)
        results.append(result)
        if progress is not None:
            progress(result)
    return results


def read_manifest(text: str, source: str) -> list[tuple[int, str, str]]:
    """(line, prompt_id, path) rows of a ``prompt_id,path`` manifest."""
    reader = csv.DictReader(io.StringIO(text))
    fields = {(f or "").strip().lower() for f in reader.fieldnames or []}
    if not {"prompt_id", "path"} <= fields:
        raise ManifestError(f"{source}: line 1: the header must be prompt_id,path")
    rows = []
    for row in reader:
        clean = {(k or "").strip().lower(): (v or "").strip() for k, v in row.items()}
        if not clean.get("path"):
            raise ManifestError(f"{source}: line {reader.line_num}: empty path")
        rows.append((reader.line_num, clean.get("prompt_id", ""), clean["path"]))
    return rows


def items_from_folder(folder: Path) -> Iterator[tuple[str, object, bytes | str]]:
    """Items from a folder with ``manifest.csv`` (prompt_id,path), or named
    ``<prompt_id>_<n>.<ext>`` when there is no manifest. The manifest is checked whole
    before any file is read. Raises ManifestError."""
    manifest = folder / "manifest.csv"
    root = folder.resolve()
    if not manifest.exists():
        for path in sorted(p for p in folder.iterdir() if p.is_file()):
            prompt_id = prompt_id_from_filename(path.name)
            yield path.name, prompt_id, path.read_bytes() if prompt_id is not None else (
                "name it <prompt_id>_<n>.png or list it in manifest.csv")
        return
    rows = read_manifest(manifest.read_text(encoding="utf-8-sig"), "manifest.csv")
    for line, _, rel in rows:
        if root not in (folder / rel).resolve().parents:
            raise ManifestError(f"manifest.csv: line {line}: {rel} is outside the folder")
    for _, prompt_id, rel in rows:
        path = (folder / rel).resolve()
        yield rel, prompt_id, path.read_bytes() if path.is_file() else "file not found"


def items_from_zip(archive: Path) -> Iterator[tuple[str, object, bytes | str]]:
    """Items from a zip read in memory (nothing is extracted to disk); members larger than
    the byte limit are reported without being inflated. Raises ManifestError."""
    limit = current_app.config["IMAGE_MAX_BYTES"]
    try:
        bundle = zipfile.ZipFile(archive)
    except zipfile.BadZipFile as exc:
        raise ManifestError(f"{archive.name}: not a zip archive ({exc})") from exc
    with bundle:
        members = {i.filename: i for i in bundle.infolist() if not i.is_dir()}
        manifest_name = next((n for n in members if Path(n).name == "manifest.csv"), None)
        if manifest_name:
            base = str(Path(manifest_name).parent)
            text = bundle.read(manifest_name).decode("utf-8-sig")
            wanted = [(pid, rel, rel if base == "." else f"{base}/{rel}")
                      for _, pid, rel in read_manifest(text, manifest_name)]
        else:
            wanted = [(prompt_id_from_filename(n), n, n) for n in sorted(members)]
        for prompt_id, shown, name in wanted:
            info = members.get(name)
            if info is None:
                yield shown, prompt_id, "file not found in the archive"
            elif info.file_size > limit:  # refused before inflating it
                yield shown, prompt_id, f"{info.file_size:,} bytes exceeds the {limit:,} byte limit"
            elif prompt_id is None:
                yield shown, None, "name it <prompt_id>_<n>.png or list it in manifest.csv"
            else:
                yield shown, prompt_id, bundle.read(info)

