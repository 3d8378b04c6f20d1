"""The ranking methods and what each supports: one table read by ``arena rank``'s choices,
the API's arguments, the OpenAPI description and :func:`arena.analysis.leaderboard.rank_models`'s
checks, so what a method accepts is said once (a new method: one row here, one
adapter there). No heavy imports: ``arena --help`` reads it.

The defaults are the service's: :data:`DEFAULT` where no method is named (the API's plain
leaderboard is the public online-Elo table, a page of its own).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Method:
    name: str
    title: str
    order_dependent: bool  # the votes' order changes the result (online ratings)
    margins: bool  # post-stratified to population shares
    weights: bool  # voters' reliability or gold weights
    rollups: bool  # fitted from the rollup's summed counts, not the log


def _table(*rows: Method) -> dict[str, Method]:
    return {row.name: row for row in rows}


METHODS = _table(
    Method("bt", "Bradley-Terry", order_dependent=False, margins=True, weights=True,
           rollups=True),
    Method("elo", "Elo", order_dependent=True, margins=False, weights=False, rollups=False),
    Method("openskill", "OpenSkill", order_dependent=True, margins=False, weights=False,
           rollups=False),
)
DEFAULT = "bt"
