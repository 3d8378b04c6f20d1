"""Vote flags: why a stored vote does not count.

Every vote is kept (the vote log is the source of truth), but one with any flag set moves no
online Elo, fills no comparison's quota and is left out of the default rankings; analysts
can include flagged votes (``include_flagged``). The flags are decided when the vote is cast
and stored with it, so ``arena elo replay`` applies the same rule to the same votes; only
``held`` is set (and cleared) later, on all of a voter's votes at once, followed by a replay.
"""

from __future__ import annotations

TOO_FAST = 1  # less time since the voter's previous action than the criterion's floor
DISTRUSTED = 2  # the voter's trust was below TRUST_FLOOR (failed gold pairs) when voting
HELD = 4  # an operator holds the voter out (arena.analysis.suspects): set on every vote

NAMES = {TOO_FAST: "too_fast", DISTRUSTED: "distrusted", HELD: "held"}


def names(flags: int) -> list[str]:
    """The names of the flags set in ``flags``, e.g. ``["too_fast"]``."""
    return [name for bit, name in NAMES.items() if flags & bit]
