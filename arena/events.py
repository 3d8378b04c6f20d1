"""The signals across features: a feature that sends one imports this module alone (it
imports nothing of Arena's), and ``create_app`` connects each to its receiver, imported only
when the signal first fires (:func:`arena.configure_events`).

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
