"""Prompt sets: import from CSV, TSV or JSON lines with a prompt column and a category."""

from __future__ import annotations

from collections.abc import Iterator
from importlib import resources
from pathlib import Path

from sqlalchemy import select

from arena.config import PACKAGE_DIR
from arena.errors import Conflict, NotFound
from arena.extensions import db
from arena.infra.tabular import TableError, read_table
from arena.models import Prompt, PromptSet

# The prompt sets shipped with the app, imported on first use (see prompts/PROVENANCE.md).
SHIPPED_SETS = {"DrawBench": "DrawBench.csv", "PartiPrompts": "PartiPrompts.tsv"}
PromptFileError = TableError  # a prompt file that cannot be imported


def shipped_prompt_file(name: str) -> Path:
    """Path of a prompt file shipped with the app (``prompts/`` in a checkout or the wheel)."""
    packaged = resources.files("arena").joinpath("prompt_sets", name)
    if packaged.is_file():
        return Path(str(packaged))
    return PACKAGE_DIR.parent / "prompts" / name


def read_prompt_file(path: str | Path) -> Iterator[tuple[int, str, str | None]]:
    """Yield (line number, text, category) from a .csv, .tsv or .jsonl file with a
    ``Prompt`` (or ``Text``) column and an optional ``Category``.

    Raises
    ------
    TableError
        Unknown extension, missing prompt column, empty prompt, invalid JSON or bad encoding.
    """
    for row in read_table(path, required=("prompt",), aliases={"prompt": ("text",)}):
        yield row.line, row.required("prompt", "prompt"), row.get("category") or None


def import_prompts(path: str | Path, name: str | None = None, progress=None) -> PromptSet:
    """Create the prompt set ``name`` (default: the file's stem) from ``path`` and commit.

    The whole file is validated before anything is written, so a bad line leaves the
    database untouched. Raises TableError, or Conflict if the set exists.
    """
    path = Path(path)
    name = name or path.stem
    rows = list(read_prompt_file(path))
    if not rows:
        raise TableError(f"{path.name}: no prompts found")
    if db.session.scalar(select(PromptSet).where(PromptSet.name == name)) is not None:
        raise Conflict(f"prompt set {name!r} already exists")
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


def prompt_set(name: str) -> PromptSet:
    """The prompt set called ``name``; a shipped one (DrawBench, PartiPrompts) is imported on
    first use. Raises NotFound."""
    found = db.session.scalar(select(PromptSet).where(PromptSet.name == name))
    if found is not None:
        return found
    if name in SHIPPED_SETS:
        return import_prompts(shipped_prompt_file(SHIPPED_SETS[name]), name=name)
    known = [*SHIPPED_SETS, *db.session.scalars(select(PromptSet.name))]
    alike = [k for k in dict.fromkeys(known) if k.casefold() == str(name).casefold()]
    if alike:  # (only the capitals differ: the name is exact)
        raise NotFound(f"no prompt set {name!r}; did you mean {alike[0]!r}?")
    raise NotFound(f"no prompt set {name!r} (import it: arena import-prompts FILE)")


def set_names() -> list[str]:
    """Every prompt set a campaign can use: the imported ones and the shipped ones."""
    return sorted(set(db.session.scalars(select(PromptSet.name))) | set(SHIPPED_SETS))


def list_prompts(set_name: str | None = None) -> list[dict]:
    """Prompts (id, text, category, set), of one set when named. Raises NotFound for a set
    that does not exist."""
    query = select(Prompt.id, Prompt.text, Prompt.category, PromptSet.name).join(PromptSet)
    if set_name:
        query = query.where(PromptSet.name == set_name)
    rows = db.session.execute(query.order_by(Prompt.id)).all()
    if set_name and not rows:
        raise NotFound(f"no prompt set {set_name!r}")
    return [{"id": r[0], "text": r[1], "category": r[2], "set": r[3]} for r in rows]


def categories() -> list[str]:
    """Every prompt category there is, for filters."""
    return list(db.session.scalars(
        select(Prompt.category).where(Prompt.category.is_not(None)).distinct()
        .order_by(Prompt.category)))
