"""The reactions across features, as signals: a feature that sends one imports this module
alone, and ``create_app`` connects each to its receiver (:func:`connect`), whose module is
imported when the signal first fires: a command that fires none imports none of them.

* ``image_added`` (sender the model; ``model_id``, ``prompt_id``): a model's new image adds
  its pairs to live campaigns;
* ``gold_wanted`` (``voter_id`` and what matchmaking was short of): a gold pair is made from a
  campaign's images;
* ``log_replayed``: the public pages take their figures afresh.
"""

from __future__ import annotations

from blinker import Namespace

_signals = Namespace()
image_added = _signals.signal("image-added")
gold_wanted = _signals.signal("gold-wanted")
log_replayed = _signals.signal("log-replayed")


def _on_new_image(sender, **details) -> None:
    from arena.campaigns import campaigns

    campaigns.on_new_image(sender, **details)


def _on_gold_wanted(sender, **details) -> None:
    from arena.campaigns import gold

    gold.on_gold_wanted(sender, **details)


def _on_log_replayed(sender, **details) -> None:
    from arena.analysis import published

    published.forget(sender, **details)


def connect() -> None:
    """Each signal to its receiver (once per process: blinker keeps one of each)."""
    image_added.connect(_on_new_image)
    gold_wanted.connect(_on_gold_wanted)
    log_replayed.connect(_on_log_replayed)
