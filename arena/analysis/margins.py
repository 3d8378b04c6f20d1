"""Population margins for post-stratification and raking.

A crowd over-represents some groups; reweighting shows what a target population would have
voted, as far as the sample reaches. A margin is a voter attribute (continent, age group,
gender) with target shares for its categories: the defaults below, or shares an analyst
supplies (``gender:female=0.5,male=0.5``). Categories without a target keep their share of
the sample; so does a category with fewer voters than ``POSTSTRAT_MIN_VOTERS`` or fewer
votes than ``POSTSTRAT_MIN_VOTES``, which is flagged instead of being blown up from a
handful of people (:func:`arena.ranking.strata.too_small`). When such categories and those
without votes hold more than ``POSTSTRAT_MAX_UNREPRESENTED`` of the population, the
reweighting is refused (:class:`CannotReweight`): the table would be the others' preferences.
Voters who did not give an attribute that is a margin are left out, and the flags say how
many votes that was.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from arena.errors import Invalid, Rejected
from arena.ranking import Calibration
from arena.ranking.strata import effective_voters, held_share, too_small, unrepresented
from arena.voting.voters import AGE_GROUPS, CONTINENTS, GENDERS

# World population by continent, 2024, from the UN World Population Prospects 2024
# (rounded; North America includes Central America and the Caribbean).
WORLD_POPULATION_SHARE = {"AS": 0.592, "AF": 0.183, "EU": 0.092, "NA": 0.076, "SA": 0.055,
                          "OC": 0.006}
# Adults (18+) by age group, UN World Population Prospects 2024, rounded to half a point.
WORLD_ADULT_AGE_SHARE = {"18-29": 0.26, "30-39": 0.21, "40-49": 0.175, "50-64": 0.21,
                         "65+": 0.145}
# Adults by sex, same source; "other" has no population figure and keeps its sample share.
WORLD_ADULT_GENDER_SHARE = {"female": 0.497, "male": 0.503}

DEFAULTS = {"continent": WORLD_POPULATION_SHARE, "age_group": WORLD_ADULT_AGE_SHARE,
            "gender": WORLD_ADULT_GENDER_SHARE}
CATEGORIES = {"continent": tuple(CONTINENTS), "age_group": AGE_GROUPS, "gender": GENDERS}
DESCRIPTIONS = {"continent": "world population by continent",
                "age_group": "world adults by age group", "gender": "world adults by sex"}


class MarginError(Invalid):
    """A margin that cannot be used: unknown attribute or category, or bad shares."""


class CannotReweight(Rejected):
    """The votes cannot speak for the population: too large a share of it is in categories
    too small to reweight or without votes."""


@dataclass(frozen=True)
class Margin:
    """A voter attribute and the target share of each of its categories."""

    attribute: str
    targets: dict[str, float]
    custom: bool = False

    def describe(self) -> str:
        if not self.custom:
            return DESCRIPTIONS[self.attribute]
        shares = ", ".join(f"{k} {v:.0%}" for k, v in self.targets.items())
        return f"{self.attribute.replace('_', ' ')}: {shares}"


def parse_margin(text: str) -> Margin:
    """``continent``, ``age_group``, ``gender`` (default targets) or
    ``ATTRIBUTE:CATEGORY=SHARE,...`` (shares need not sum to 1; they are normalised).
    Raises MarginError."""
    attribute, _, spec = (text or "").strip().partition(":")
    attribute = attribute.strip().replace("-", "_")
    if attribute not in DEFAULTS:
        raise MarginError(f"margin must be one of {', '.join(DEFAULTS)}, optionally with "
                          "shares (gender:female=0.5,male=0.5)", field="margin")
    if not spec.strip():
        return Margin(attribute, dict(DEFAULTS[attribute]))
    targets = {}
    for part in spec.split(","):
        category, _, share = part.partition("=")
        category = category.strip().upper() if attribute == "continent" else category.strip()
        if category not in CATEGORIES[attribute]:
            raise MarginError(f"{attribute}: unknown category {category!r} (one of "
                              f"{', '.join(CATEGORIES[attribute])})", field="margin")
        try:
            value = float(share)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value < 0:
            raise MarginError(f"{attribute}: the share of {category} must be a number >= 0",
                              field="margin")
        targets[category] = value
    if sum(targets.values()) <= 0:
        raise MarginError(f"{attribute}: shares must not all be 0", field="margin")
    total = sum(targets.values())
    return Margin(attribute, {k: v / total for k, v in targets.items()}, custom=True)


def margins_from(values) -> tuple[Margin, ...]:
    """Margins from strings or Margin objects, each attribute at most once."""
    margins = tuple(v if isinstance(v, Margin) else parse_margin(v) for v in values or ())
    seen = [m.attribute for m in margins]
    if len(set(seen)) != len(seen):
        raise MarginError("each attribute can be a margin once", field="margin")
    return margins


def calibration(margins: tuple[Margin, ...], cells: np.ndarray, votes: np.ndarray,
                voters: np.ndarray, min_votes: int, min_voters: int,
                max_unrepresented: float = 1.0, squares: np.ndarray | None = None
                ) -> tuple[Calibration, list[str]]:
    """The raking of ``cells`` (cell x margin category indices into CATEGORIES) holding
    ``votes[c]`` votes of ``voters[c]`` voters each, and flags for categories held at their
    sample share. With ``squares`` (per cell, the sum of its voters' votes squared) a
    category's voters count as what they are worth of equal votes under the raking's weights
    (:func:`strata.effective_voters`): a category one voter dominates is held too.

    Raises
    ------
    CannotReweight
        When categories held at their sample share or without votes make up more than
        ``max_unrepresented`` of a margin's population (:func:`strata.unrepresented`)."""
    weights = None
    for _ in range(3):  # (a category held changes the weights, and so what the others are worth)
        raking, flags, groups = _calibration(margins, cells, votes, voters, min_votes,
                                             min_voters, max_unrepresented, squares, weights)
        now = raking.weights(votes)
        if squares is None or (weights is not None and np.allclose(now, weights)):
            break
        weights = now
    held = sum(held_share(cells[:, m], votes, now, [margin.targets.get(name, math.nan)
                                                   for name in CATEGORIES[margin.attribute]])
               for m, margin in enumerate(margins))
    return replace(raking, held=held, held_groups=tuple(groups)), flags


def _calibration(margins, cells, votes, voters, min_votes, min_voters, max_unrepresented,
                 squares, weights) -> tuple[Calibration, list[str], list[str]]:
    """The raking at ``weights`` (None: each cell's voters counted as they are), its flags
    and the groups it leaves off their targets (too small to reweight, or without votes)."""
    targets, flags, groups = [], [], []
    for m, margin in enumerate(margins):
        names = CATEGORIES[margin.attribute]
        per_votes = np.bincount(cells[:, m], weights=votes, minlength=len(names))
        per_voters = np.bincount(cells[:, m], weights=voters, minlength=len(names))
        worth = per_voters if squares is None else np.minimum(per_voters, effective_voters(
            cells[:, m], votes, squares, weights, len(names)))
        target = np.array([margin.targets.get(name, math.nan) for name in names])
        small = too_small(per_votes, worth, min_votes, min_voters) & ~np.isnan(target)
        lost = unrepresented(target, per_votes, small)
        if lost > max_unrepresented and per_votes.sum() > 0:  # (no votes: nothing to show)
            raise CannotReweight(_cannot(margin, names, per_votes, per_voters, worth, small,
                                         lost, max_unrepresented, min_votes, min_voters),
                                 field="margin")
        for k in np.flatnonzero(small):
            target[k] = math.nan
            groups.append(_label(margin.attribute, names[k]))
            said = _voters(per_voters[k], worth[k])
            flags.append(f"{_label(margin.attribute, names[k])}: {said}, "
                         f"{per_votes[k]:.0f} votes (fewer than {min_voters} voters or "
                         f"{min_votes} votes), kept at its sample share, not reweighted")
        missing = [names[k] for k in range(len(names))
                   if margin.targets.get(names[k], 0) > 0 and per_votes[k] == 0]
        if missing:
            flags.append(f"{margin.attribute.replace('_', ' ')}: no votes from "
                         f"{', '.join(_label(margin.attribute, n) for n in missing)}; "
                         "their share is spread over the others")
            groups += [_label(margin.attribute, n) for n in missing]
        targets.append(target)
    return Calibration(cells, tuple(targets)), flags, groups


def _voters(voters: float, worth: float) -> str:
    """``3 voters``, or where a few cast most of the votes ``20 voters worth 6``."""
    said = _count(voters, "voter")
    return said if worth >= voters - 0.5 else f"{said} worth {worth:.0f} of equal votes"


def _cannot(margin, names, per_votes, per_voters, worth, small, lost, most, min_votes,
            min_voters) -> str:
    """Why a margin cannot be reweighted, naming each group it would have to guess."""
    groups = [f"{_label(margin.attribute, name)}, {margin.targets[name]:.0%} of the "
              f"population: {_voters(per_voters[k], worth[k])}, {_count(per_votes[k], 'vote')}"
              for k, name in enumerate(names)
              if margin.targets.get(name, 0) > 0 and (small[k] or per_votes[k] == 0)]
    return (f"cannot reweight to {margin.describe()}: {lost:.0%} of that population is in "
            f"groups too small to estimate (each needs {_count(min_voters, 'voter')} and "
            f"{_count(min_votes, 'vote')}), more than the {most:.0%} a reweighted table may "
            f"leave to the others' preferences. {'; '.join(groups)}. Rank without "
            "reweighting, or with shares the votes can carry")


def _count(n, word: str) -> str:
    return f"{n:,.0f} {word}{'' if round(n) == 1 else 's'}"


def _label(attribute: str, name: str) -> str:
    return CONTINENTS[name] if attribute == "continent" else name
