"""What an attacker can learn without looking at a pixel: observations of served images as
a voter or evaluator gets them, and the classifiers that try to tell a label from them.

Shared by the attack tests (tests/security) and benchmarks/blinding.py, which prints the
attack table.
"""

from __future__ import annotations

import hashlib
import io
import re
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
from PIL import Image as PILImage
from scipy.stats import binom

CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')
HYPE_IMAGE = re.compile(r'<img class="hype-image" src="([^"]+)"')
TRIAL_ID = re.compile(r'name="trial_id" value="(\d+)"')
IGNORED_HEADERS = {"date"}


@dataclass
class Seen:
    """One served image as the attacker saw it, and the truth it tries to guess."""

    url: str
    label: str
    position: int  # order: place in the stage, or 0/1 for left/right
    headers: dict[str, str] = field(default_factory=dict)
    width: int = 0
    height: int = 0
    length: int = 0
    container: dict[str, int] = field(default_factory=dict)  # what the file's header says
    content: int | None = None  # the pixels re-encoded: what any script holding them knows
    digest: str = ""  # the served file's SHA-256: which responses were the same bytes
    # the size of the VP8 frame's first partition (its header data: modes, probabilities),
    # read from the file's first bytes: a property of the picture, as ``content`` is
    first_partition: int | None = None

    def features(self) -> dict[str, object]:
        """Everything but the pixels and the byte length (reported on its own)."""
        name = self.url.rsplit("/img/", 1)[-1]
        features = {"url length": len(self.url), "url chars": "".join(sorted(set(name))),
                    "url prefix": name[:1], "url digits": sum(c.isdigit() for c in name),
                    "width": self.width, "height": self.height,
                    "position": self.position, "position parity": self.position % 2}
        features.update({f"header {k}": v for k, v in self.headers.items()
                         if k not in IGNORED_HEADERS and k != "content-length"})
        features.update(self.container)
        return features


def container(data: bytes) -> dict[str, int]:
    """The sizes a WebP file declares about itself (RIFF size, each chunk's size) and the
    run of zero bytes at its end: where padding outside the image data would show."""
    out = {"riff size": int.from_bytes(data[4:8], "little") if data[:4] == b"RIFF" else -1}
    offset = 12
    while offset + 8 <= len(data):
        kind = data[offset:offset + 4].decode("latin-1")
        size = int.from_bytes(data[offset + 4:offset + 8], "little")
        out[f"chunk {kind.strip()} size"] = size
        offset += 8 + size + size % 2
    out["trailing zeros"] = len(data) - len(data.rstrip(b"\0"))
    return out


def fetch(client, url: str, label: str, position: int, pixels: bool = False) -> Seen:
    """GET ``url`` as a browser would and note everything but the pixels (with ``pixels``,
    also the length of the decoded pixels re-encoded and the size of the VP8 frame's first
    partition: statistics of the content itself)."""
    path = re.sub(r"^https?://[^/]+", "", url)
    with client.get(path) as response:
        assert response.status_code == 200, (path, response.status_code)
        data = response.get_data()
        headers = {k.lower(): v for k, v in response.headers.items()}
    img = PILImage.open(io.BytesIO(data))
    content = first_partition = None
    if pixels:
        buf = io.BytesIO()
        img.convert("RGB").save(buf, "WEBP", quality=82)
        content = len(buf.getvalue())
        if data[12:16] == b"VP8 ":  # (the frame tag: 3 bytes, the size in its top 19 bits)
            first_partition = int.from_bytes(data[20:23], "little") >> 5
    return Seen(url, label, position, headers, img.width, img.height, len(data),
                container(data), content, hashlib.sha256(data).hexdigest(), first_partition)


def chance_ceiling(n: int, alpha: float = 1e-3) -> float:
    """The accuracy a coin reaches on ``n`` test cases with probability ``alpha`` (one-sided):
    an attack below it is indistinguishable from guessing."""
    return float(binom.ppf(1 - alpha, n, 0.5) / n)


def _split(n: int, rng: np.random.Generator):
    order = rng.permutation(n)
    return order[: n // 2], order[n // 2:]


def stump_accuracy(values: list, labels: list[str], rng: np.random.Generator) -> float:
    """Held-out accuracy of the best one-feature rule learnt on half the data: a lookup from
    value to the majority label (exact values), or the best threshold (numbers)."""
    train, test = _split(len(values), rng)
    classes = sorted(set(labels))
    majority = Counter(labels[i] for i in train).most_common(1)[0][0]
    by_value: dict[object, Counter] = {}
    for i in train:
        by_value.setdefault(values[i], Counter())[labels[i]] += 1
    lookup = {v: c.most_common(1)[0][0] for v, c in by_value.items()}
    scores = [np.mean([lookup.get(values[i], majority) == labels[i] for i in test])]
    if all(isinstance(v, int | float) for v in values) and len(classes) == 2:
        xs = np.array(values, float)
        best, best_rule = -1.0, None
        for threshold in np.unique(xs[train]):
            for high in classes:
                guess = np.where(xs[train] >= threshold, high,
                                 classes[0] if high == classes[1] else classes[1])
                acc = np.mean(guess == np.array(labels)[train])
                if acc > best:
                    best, best_rule = acc, (threshold, high)
        threshold, high = best_rule
        low = classes[0] if high == classes[1] else classes[1]
        scores.append(np.mean([(high if xs[i] >= threshold else low) == labels[i]
                               for i in test]))
    return float(max(scores))


def attack(seen: list[Seen], rng: np.random.Generator, splits: int = 5) -> dict[str, float]:
    """Mean held-out accuracy, over ``splits`` random halvings, of the best rule on each
    channel; "byte length" is reported beside the others."""
    labels = [s.label for s in seen]
    columns = {name: [s.features().get(name) for s in seen]
               for name in sorted({k for s in seen for k in s.features()})}
    columns["byte length"] = [s.length for s in seen]
    if all(s.content is not None for s in seen):
        columns["pixels re-encoded (content)"] = [s.content for s in seen]
    if all(s.first_partition is not None for s in seen):
        columns["VP8 first partition (content)"] = [s.first_partition for s in seen]
    return {name: float(np.mean([stump_accuracy(values, labels, rng) for _ in range(splits)]))
            for name, values in columns.items()}
