"""Ingestion: the one path by which generations enter the arena (web page, API and CLI).

Each file is decoded and checked by :func:`arena.catalog.images.decode`, re-encoded and
stored under its content hash, attached to a prompt, and the comparisons it makes possible
in the published campaigns its model takes part in are added. A batch keeps the good files
and reports the bad ones, each with its reason and the kind of error it is.

Which prompt a file belongs to: the ``prompt_id`` given with it, else its line in a
``manifest.csv`` (``prompt_id,path``), else its name ``<prompt_id>_<n>.png``. The manifest is
parsed here only (the upload page sends it along with each file), so every channel matches
files to lines alike: by the path as written, or by file name when that is unambiguous.
"""

from __future__ import annotations

import re
import time
import unicodedata
import zipfile
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath

from flask import current_app
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from arena import events
from arena.catalog import images
from arena.errors import ArenaError, Conflict, Invalid, NotFound, Rejected
from arena.extensions import db
from arena.infra.tabular import TableError, parse_table
from arena.models import GenModel, Image, Prompt

FILENAME = re.compile(r"^(\d+)_(\d+)\.[A-Za-z]+$")  # <prompt_id>_<n>.png
UNNAMED = "name it <prompt_id>_<n>.png or list it in manifest.csv"
NOT_PROCESSED = ("not processed: this upload used its {:g} s; send this file again (files "
                 "already stored are recognised as such)")
# Sent (model_id=, prompt_id=) when a model's new image is flushed, inside its transaction:
# the campaigns feature adds the pairs it makes possible (wired in create_app).
ManifestError = TableError  # an unusable manifest or archive; the message names the line


@dataclass
class IngestResult:
    filename: str
    ok: bool
    reason: str | None = None
    image_id: int | None = None
    prompt_id: int | None = None
    duplicate: bool = False
    held: bool = False  # identical to an image the arena holds: out of every pair until reviewed
    error: ArenaError | None = field(default=None, repr=False, compare=False)

    def as_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if k != "error"}

    @classmethod
    def refused(cls, filename: str, error: ArenaError, prompt_id: int | None = None):
        # kept without its traceback, whose frames hold the refused file's bytes
        error.__traceback__ = error.__cause__ = error.__context__ = None
        return cls(filename, False, error.message, prompt_id=prompt_id, error=error)


class Manifest:
    """``prompt_id,path`` lines, looked up by path as written or by unambiguous file name."""

    def __init__(self, rows: list[tuple[int, str, str]]):
        self.rows = rows
        self.by_path = {PurePosixPath(rel).as_posix(): pid for _, pid, rel in rows}
        names: dict[str, list[str]] = {}
        for _, pid, rel in rows:
            names.setdefault(PurePosixPath(rel).name, []).append(pid)
        self.by_name = {name: pids[0] for name, pids in names.items() if len(pids) == 1}

    @classmethod
    def parse(cls, text: str, source: str = "manifest.csv") -> Manifest:
        """Raises TableError naming the line."""
        rows = []
        for row in parse_table(text, "csv", source, required=("prompt_id", "path")):
            rows.append((row.line, row.get("prompt_id"), row.required("path")))
        return cls(rows)

    def prompt_for(self, filename: str) -> str | None:
        path = PurePosixPath(filename.replace("\\", "/"))
        return self.by_path.get(path.as_posix()) or self.by_name.get(path.name)


def upload_name(name: str | None) -> str:
    """An uploaded file's name as the arena uses and shows it: its last path component,
    without control or format characters (NUL, escapes, bidi overrides) or characters file
    systems refuse, at most 200 characters; "upload" when nothing is left. A browser's or a
    script's name is untrusted text: it reaches pages, JSON and logs only this way."""
    last = re.split(r"[/\\]", unicodedata.normalize("NFC", name or ""))[-1]
    kept = "".join(c for c in printable(last) if c not in ':*?"<>|')
    return kept.strip(" .")[:200] or "upload"


def printable(text: str) -> str:
    """``text`` without control or format characters: a name from an archive shown on a
    terminal cannot clear the screen or reorder what follows it."""
    return "".join(c for c in text if unicodedata.category(c) not in ("Cc", "Cf", "Cs"))


def prompt_id_from_filename(filename: str) -> int | None:
    match = FILENAME.match(PurePosixPath(filename.replace("\\", "/")).name)
    return int(match.group(1)) if match else None


def ingest_image(model: GenModel, prompt_id, data: bytes | str, filename: str
                 ) -> IngestResult:
    """Validate, store and attach one image to ``prompt_id`` for ``model``; commits.

    ``data`` is the file's bytes, or a string saying why the file could not be read.
    Never raises for bad input: the result says what was wrong (``error`` is its kind).
    """
    if isinstance(data, str):
        return IngestResult.refused(filename, Rejected(data))
    try:
        prompt = _prompt(prompt_id)
        decoded = images.decode(data, filename=filename)
        _check_room(model, prompt.id)
    except ArenaError as exc:
        return IngestResult.refused(filename, exc, _as_int(prompt_id))
    return _store(model, prompt.id, decoded, filename)


def _as_int(value) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _prompt(prompt_id) -> Prompt:
    number = _as_int(prompt_id)
    if number is None or isinstance(prompt_id, bool):
        raise Invalid("prompt_id must be a prompt's number", field="prompt_id")
    prompt = db.session.get(Prompt, number) if -2**31 <= number < 2**31 else None
    if prompt is None:
        raise NotFound(f"no prompt {number}", field="prompt_id")
    return prompt


def _check_room(model: GenModel, prompt_id: int) -> None:
    limit = current_app.config["IMAGES_PER_PROMPT"]
    have = db.session.scalar(select(func.count()).select_from(Image).where(
        Image.model_id == model.id, Image.prompt_id == prompt_id))
    if have >= limit:  # checked before anything is written
        raise Conflict(f"{model.name} already has {limit} images for prompt {prompt_id}")


def _store(model: GenModel, prompt_id: int, decoded, filename: str) -> IngestResult:
    """Write the files, then commit the row; if the row does not commit (whatever stops
    it, a stopped worker included), the files this upload wrote are deleted."""
    prepared = images.prepare(decoded)
    try:
        return _add(model, prompt_id, prepared, filename)
    except BaseException:
        db.session.rollback()
        images.discard(prepared)
        raise


def _add(model: GenModel, prompt_id: int, prepared: images.Prepared, filename: str
         ) -> IngestResult:
    row, created = images.add_prepared(prepared, model_id=model.id, prompt_id=prompt_id)
    if not created:
        own = db.session.scalar(select(Image).where(
            Image.sha256 == row.sha256, Image.model_id == model.id,
            Image.prompt_id == prompt_id))
        if own is not None:  # the owner's own upload again: telling them reveals nothing
            return IngestResult(filename, True, "identical image already uploaded",
                                image_id=own.id, prompt_id=prompt_id, duplicate=True)
        # Bytes held elsewhere (another owner's image, a gold or a real one). Kept out of
        # every comparison and HYPE pool, and said so: keeping quiet did not hide it (the
        # owner's page showed no new pairs) and let a rival who uploaded a model's images
        # first have the rightful owner's uploads dropped without a word. Operators see
        # every collision (`arena images collisions`, the admin page) and decide.
        row = images.quarantined_copy(row, model_id=model.id, prompt_id=prompt_id)
    try:
        db.session.flush()
        if not row.quarantined:
            events.image_added.send(model, model_id=model.id, prompt_id=prompt_id)
        db.session.commit()
    except IntegrityError:
        # the same bytes arrived in a concurrent request and won the unique hash
        db.session.rollback()
        images.discard(prepared)
        return IngestResult.refused(filename, Conflict(
            "identical image uploaded at the same moment; retry to see which one was kept"),
            prompt_id)
    if row.quarantined:
        return IngestResult(filename, True, HELD_REASON, image_id=row.id,
                            prompt_id=prompt_id, held=True)
    return IngestResult(filename, True, image_id=row.id, prompt_id=prompt_id)


HELD_REASON = ("held for review: identical to an image the arena already holds (another "
               "model's, or a reference image); it enters no comparison until an operator "
               "looks at it")


def ingest_batch(model: GenModel, items: Iterable[tuple[str, object, bytes | str]],
                 progress: Callable[[IngestResult], None] | None = None,
                 budget_seconds: float | None = None) -> list[IngestResult]:
    """Ingest (filename, prompt_id, bytes) items one by one; a bad file never stops the rest.
    With ``budget_seconds``, items not started within that time come back as not processed
    (once one new image is stored: sent again, a batch always moves on), so a request ends
    in time with a result for every file."""
    results = []
    deadline = None if budget_seconds is None else time.monotonic() + budget_seconds
    moved_on = False
    for filename, prompt_id, data in items:
        if moved_on and deadline is not None and time.monotonic() >= deadline:
            result = IngestResult(filename, False, NOT_PROCESSED.format(budget_seconds))
        else:
            result = ingest_image(model, prompt_id, data, filename)
            moved_on = moved_on or (result.ok and not result.duplicate)
        results.append(result)
        if progress is not None:
            progress(result)
    return results


def ingest_uploads(model: GenModel, files: list[tuple[str, bytes]],
                   prompt_id: str | None = None,
                   budget_seconds: float | None = None) -> list[IngestResult]:
    """The upload form: files as (name, bytes), a ``manifest.csv`` among them or not, an
    optional prompt id for all, and the seconds the request may spend storing them. Raises
    TableError for an unusable manifest (nothing is stored then)."""
    files = [(upload_name(name), data) for name, data in files]
    manifest = next((_manifest(data) for name, data in files
                     if name == "manifest.csv"), Manifest([]))
    items = []
    for name, data in files:
        if name == "manifest.csv":
            continue
        chosen = prompt_id or manifest.prompt_for(name) or prompt_id_from_filename(name)
        items.append((name, chosen, data if chosen is not None else UNNAMED))
    return ingest_batch(model, items, budget_seconds=budget_seconds)


def _manifest(data: bytes, source: str = "manifest.csv") -> Manifest:
    """Raises TableError for more bytes than MANIFEST_MAX_BYTES or text that is not UTF-8."""
    _check_manifest_size(len(data), source)
    return Manifest.parse(_utf8(data, source), source)


def _check_manifest_size(size: int, source: str) -> None:
    limit = current_app.config["MANIFEST_MAX_BYTES"]
    if size > limit:
        raise TableError(f"{source}: {size:,} bytes exceeds the {limit:,} byte limit of a "
                         "manifest (MANIFEST_MAX_BYTES)")


def _utf8(data: bytes, source: str = "manifest.csv") -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise TableError(f"{source}: not UTF-8 text ({exc.reason})") from exc


def import_items(source: Path) -> tuple[int, Iterator[tuple[str, object, bytes | str]]]:
    """How many items a folder or a zip holds, and the items, each file read only when its
    turn comes (never the whole archive in memory). Raises TableError."""
    reader = items_from_folder if source.is_dir() else items_from_zip
    count = sum(1 for _ in reader(source, read=False))
    return count, reader(source)


def items_from_folder(folder: Path, read: bool = True
                      ) -> Iterator[tuple[str, object, bytes | str]]:
    """Items from a folder with ``manifest.csv`` (prompt_id,path), or named
    ``<prompt_id>_<n>.<ext>`` when there is no manifest. The manifest is checked whole
    before any file is read. With ``read`` False, no file's bytes are read (b"" instead).
    Raises TableError."""
    manifest_path = folder / "manifest.csv"
    root = folder.resolve()
    if not manifest_path.exists():
        for path in sorted(p for p in folder.iterdir() if p.is_file()):
            prompt_id = prompt_id_from_filename(path.name)
            yield path.name, prompt_id, _file(path, read) if prompt_id is not None else UNNAMED
        return
    _check_manifest_size(manifest_path.stat().st_size, "manifest.csv")
    manifest = _manifest(manifest_path.read_bytes())
    for line, _, rel in manifest.rows:
        if root not in (folder / rel).resolve().parents:
            raise TableError(f"manifest.csv: line {line}: {rel} is outside the folder")
    for _, prompt_id, rel in manifest.rows:
        path = (folder / rel).resolve()
        yield rel, prompt_id, _file(path, read) if path.is_file() else "file not found"


def _file(path: Path, read: bool) -> bytes | str:
    """A file's bytes (b"" unless ``read``), or why not: more than the byte limit is never
    read into memory."""
    limit, size = current_app.config["IMAGE_MAX_BYTES"], path.stat().st_size
    if size > limit:
        return f"{size:,} bytes exceeds the {limit:,} byte limit"
    return path.read_bytes() if read else b""


def items_from_zip(archive: Path, read: bool = True
                   ) -> Iterator[tuple[str, object, bytes | str]]:
    """Items from a zip read in memory (nothing is extracted to disk), one member at a time.
    Every member is inflated with a cap: one declared or found larger than its limit (the
    image byte limit, or MANIFEST_MAX_BYTES for the manifest) is refused without more of it
    in memory than the limit, so a zip bomb costs no more than a legitimate file. With
    ``read`` False, no image member is inflated (b"" instead). Raises TableError."""
    limit = current_app.config["IMAGE_MAX_BYTES"]
    try:
        bundle = zipfile.ZipFile(archive)
    except zipfile.BadZipFile as exc:
        raise TableError(f"{archive.name}: not a zip archive ({exc})") from exc
    with bundle:
        members = {i.filename: i for i in bundle.infolist() if not i.is_dir()}
        manifest_name = next((n for n in members if Path(n).name == "manifest.csv"), None)
        if manifest_name:
            base = str(Path(manifest_name).parent)
            info = members[manifest_name]
            _check_manifest_size(info.file_size, manifest_name)  # before inflating a byte
            data = _capped(bundle, info, current_app.config["MANIFEST_MAX_BYTES"])
            if isinstance(data, str):
                raise TableError(f"{manifest_name}: {data}")
            manifest = _manifest(data, manifest_name)
            wanted = [(pid, rel, rel if base == "." else f"{base}/{rel}")
                      for _, pid, rel in manifest.rows]
        else:
            wanted = [(prompt_id_from_filename(n), n, n) for n in sorted(members)]
        for prompt_id, shown, name in wanted:
            info = members.get(name)
            if info is None:
                yield shown, prompt_id, "file not found in the archive"
            elif info.file_size > limit:  # refused before inflating it
                yield shown, prompt_id, f"{info.file_size:,} bytes exceeds the {limit:,} byte limit"
            elif prompt_id is None:
                yield shown, None, UNNAMED
            else:
                yield shown, prompt_id, _capped(bundle, info, limit) if read else b""


def _capped(bundle: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int) -> bytes | str:
    """A member's bytes, or why it cannot be read: a corrupt member (or one whose inflated
    bytes disagree with its declared size or checksum) is that file's failure, reported like
    any other, not the end of the import. At most ``limit`` + 1 bytes are ever inflated,
    whatever the member's header claims."""
    data = bytearray()
    try:
        with bundle.open(info) as fh:
            while len(data) <= limit and (chunk := fh.read(1 << 20)):
                data += chunk
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError) as exc:
        return f"corrupt in the archive ({exc})"
    if len(data) > limit:
        return f"inflates to more than the {limit:,} byte limit"
    return bytes(data)
