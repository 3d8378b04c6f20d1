"""The criteria voters answer, in one table: each one's question, the least time a vote on
it takes, how its gold pairs are made and whether its tasks show a caption.

Built in: preference, coherence and alignment. An operator adds more with
``EXTRA_CRITERIA`` (``ARENA_EXTRA_CRITERIA='[{"name": "realism", "question": "Which image
looks more like a photograph?"}]'``; the other keys as :class:`Criterion`'s), read when the
app is made; everything that lists, checks or treats a criterion asks this module.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields

from flask import Flask, current_app

from arena.config import N_
from arena.errors import Invalid

GOLD_KINDS = ("damaged", "swapped")


@dataclass(frozen=True)
class Criterion:
    """``question``: what the voter is asked (translated where the catalogue has it);
    ``min_vote_ms``: the least time from the last action to a vote that is not flagged too
    fast (unless ``MIN_VOTE_MS`` gives the whole table); ``gold``: its automatic gold
    pairs, "damaged" (a generation against a damaged copy of itself, or a pair the crowd
    has settled) or
    "swapped" (an image against another prompt's, under this one's caption); ``caption``:
    its tasks show the prompt, revealed word by word and confirmed read, before the images
    can be chosen."""

    name: str
    question: str
    min_vote_ms: int = 700
    gold: str = "damaged"
    caption: bool = False


BUILT_IN = (
    Criterion("preference", N_("Which image do you prefer?"), min_vote_ms=700),
    Criterion("coherence", N_("Which image is more plausible to exist and has fewer odd or "
                              "impossible-looking things?"), min_vote_ms=900),
    Criterion("alignment", N_("Which image better reflects the caption above them?"),
              min_vote_ms=700, gold="swapped", caption=True),
)
_KEY = "arena.criteria"
# a name means one criterion in a process: the statements built for it are kept
# (arena.voting.matchmaking's, keyed by its name)
_DEFINED = {c.name: c for c in BUILT_IN}


def configure(app: Flask) -> None:
    """The app's table: the built-in criteria and ``EXTRA_CRITERIA``. Raises ValueError
    naming a bad entry."""
    table = {c.name: c for c in BUILT_IN}
    known = {f.name for f in fields(Criterion)}
    for entry in app.config.get("EXTRA_CRITERIA") or ():
        if not isinstance(entry, dict) or not {"name", "question"} <= set(entry) \
                or set(entry) - known:
            raise ValueError(f"EXTRA_CRITERIA: each entry is an object with a name, a question "
                             f"and optionally {', '.join(sorted(known - {'name', 'question'}))}"
                             f"; not {entry!r}")
        criterion = Criterion(**entry)
        if not isinstance(criterion.name, str) or not re.fullmatch(r"[a-z][a-z0-9_]{0,19}",
                                                                   criterion.name):
            raise ValueError(f"EXTRA_CRITERIA: a name is 1-20 lowercase letters, digits or _, "
                             f"starting with a letter; not {criterion.name!r}")
        if criterion.name in table:
            raise ValueError(f"EXTRA_CRITERIA: {criterion.name} is defined twice")
        if not isinstance(criterion.question, str) or not criterion.question.strip():
            raise ValueError(f"EXTRA_CRITERIA: {criterion.name} needs a question")
        if criterion.gold not in GOLD_KINDS or (criterion.gold == "swapped"
                                                and not criterion.caption):
            raise ValueError(f"EXTRA_CRITERIA: {criterion.name}'s gold is damaged, or swapped "
                             "for a criterion with a caption")
        if isinstance(criterion.min_vote_ms, bool) or not isinstance(criterion.min_vote_ms, int) \
                or criterion.min_vote_ms < 0:
            raise ValueError(f"EXTRA_CRITERIA: {criterion.name}'s min_vote_ms is a whole "
                             "number of milliseconds")
        if _DEFINED.setdefault(criterion.name, criterion) != criterion:
            raise ValueError(f"EXTRA_CRITERIA: {criterion.name} is defined otherwise by "
                             "another app in this process (statements made for it are kept)")
        table[criterion.name] = criterion
    app.extensions[_KEY] = table


def table() -> dict[str, Criterion]:
    """The app's criteria by name, in their order."""
    return current_app.extensions[_KEY]


def names() -> tuple[str, ...]:
    return tuple(table())


def captioned() -> tuple[str, ...]:
    """The criteria whose tasks show a caption."""
    return tuple(name for name, c in table().items() if c.caption)


def get(name) -> Criterion:
    """Criterion ``name``; raises Invalid naming the app's criteria."""
    found = table().get(name) if isinstance(name, str) else None
    if found is None:
        raise Invalid(f"criterion must be one of {', '.join(table())}", field="criterion")
    return found


def check(name) -> str:
    """``name`` if it is one of the app's criteria; raises Invalid naming them."""
    return get(name).name
