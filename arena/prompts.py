"""Prompt sets: import from CSV, TSV or JSON lines with a prompt column and a category."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path

from sqlalchemy import func, select

from .extensions import db
from .models import Prompt, PromptSet

PROMPT_COLUMNS = ("prompt", "text")
CATEGORY_COLUMNS = ("category",)


class PromptFileError(ValueError):
    """A prompt file that cannot be imported; the message names the line and the problem."""


def _pick(header: dict[str, str], names: tuple[str, ...]) -> str | None:
    lowered = {k.strip().lower(): k for k in header if k is not None}
    for name in names:
        if name in lowered:
            return lowered[name]
    return None


def read_prompt_file(path: str | Path) -> Iterator[tuple[int, str, str | None]]:
    """Yield (line number, text, category) from a .csv, .tsv or .jsonl file.

    Raises
    ------
    PromptFileError
        Unknown extension, missing prompt column, empty prompt, invalid JSON or bad encoding.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    try:
        raw = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise PromptFileError(f"{path.name}: not UTF-8 text ({exc.reason})") from exc
    if suffix in (".csv", ".tsv"):
        reader = csv.DictReader(io.StringIO(raw), delimiter="\t" if suffix == ".tsv" else ",")
        text_col = _pick(dict.fromkeys(reader.fieldnames or []), PROMPT_COLUMNS)
        if text_col is None:
            raise PromptFileError(
                f"{path.name}: line 1: no 'Prompt' column (found {reader.fieldnames})"
            )
        cat_col = _pick(dict.fromkeys(reader.fieldnames or []), CATEGORY_COLUMNS)
        for row in reader:
            line = reader.line_num
            text = (row.get(text_col) or "").strip()
            if not text:
                raise PromptFileError(f"{path.name}: line {line}: empty prompt")
            category = (row.get(cat_col) or "").strip() if cat_col else ""
            yield line, text, category or None
    elif suffix in (".jsonl", ".ndjson"):
        for line, chunk in enumerate(raw.splitlines(), start=1):
            if not chunk.strip():
                continue
            try:
                obj = json.loads(chunk)
            except json.JSONDecodeError as exc:
                raise PromptFileError(f"{path.name}: line {line}: invalid JSON ({exc.msg})")
            if not isinstance(obj, dict):
                raise PromptFileError(f"{path.name}: line {line}: expected an object")
            key = _pick(dict.fromkeys(obj), PROMPT_COLUMNS)
            text = str(obj.get(key) or "").strip() if key else ""
            if not text:
                raise PromptFileError(f"{path.name}: line {line}: no prompt text")
            cat_key = _pick(dict.fromkeys(obj), CATEGORY_COLUMNS)
            category = str(obj.get(cat_key) or "").strip() if cat_key else ""
            yield line, text, category or None
    else:
        raise PromptFileError(f"{path.name}: unknown file type (use .csv, .tsv or .jsonl)")


def import_prompts(path: str | Path, name: str | None = None, progress=None) -> PromptSet:
    """Create the prompt set ``name`` (default: the file's stem) from ``path`` and commit.

    The whole file is validated before anything is written, so a bad line leaves the
    database untouched. Raises ``PromptFileError``, or ``ValueError`` if the set exists.
    """
    path = Path(path)
    name = name or path.stem
    rows = list(read_prompt_file(path))
    if not rows:
        raise PromptFileError(f"{path.name}: no prompts found")
    if db.session.scalar(select(PromptSet).where(PromptSet.name == name)) is not None:
        raise ValueError(f"prompt set {name!r} already exists")
    prompt_set = PromptSet(name=name, source=path.name)
    db.session.add(prompt_set)
    db.session.flush()
    for position, (_line, text, category) in enumerate(rows, start=1):
        db.session.add(
            Prompt(prompt_set_id=prompt_set.id, position=position, text=text, category=category)
        )
        if progress is not None:
            progress(1)
    db.session.commit()
    return prompt_set


def prompt_count(prompt_set: PromptSet) -> int:
    return db.session.scalar(
        select(func.count()).select_from(Prompt).where(Prompt.prompt_set_id == prompt_set.id)
    )
