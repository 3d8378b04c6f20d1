"""Zip bombs against `arena import`: a 300 KB archive whose manifest.csv inflates to 300 MB
cost the import 1.96 GB, and every member was held in memory at once. Now each member is
inflated with a cap (its declared size is checked first, its actual bytes counted as they
come) and one file is in memory at a time; the bombs are built here, for real."""

from __future__ import annotations

import tracemalloc
import zipfile

import pytest
from sqlalchemy import func, select

from arena.extensions import db
from arena.models import Image, Prompt
from tests.datasets import IMAGES
from tests.factories import make_model, make_owner, make_prompt_set

MB = 1 << 20


@pytest.fixture
def model(app):
    with app.app_context():
        make_prompt_set("s", ["a red cube", "a blue ball"])
        make_model("Acme-1", make_owner("acme")[0])
        return db.session.scalars(select(Prompt.id).order_by(Prompt.id)).all()


def _bomb(path, name: str, size: int, head: bytes = b"") -> None:
    """A member ``name`` of ``size`` inflated bytes (after ``head``), written streaming."""
    chunk = b"1," + b"x" * (MB - 3) + b"\n"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as bundle, \
            bundle.open(name, "w") as out:
        out.write(head)
        for _ in range(size // len(chunk)):
            out.write(chunk)


def _import(app, archive):
    tracemalloc.start()
    try:
        result = app.test_cli_runner().invoke(args=["import", str(archive), "--model", "Acme-1"])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return result, peak


def test_a_manifest_that_inflates_to_300_mb_is_refused_with_little_memory(app, model, tmp_path):
    archive = tmp_path / "bomb.zip"
    _bomb(archive, "manifest.csv", 300 * MB, b"prompt_id,path\n")
    assert archive.stat().st_size < 400_000
    result, peak = _import(app, archive)
    assert result.exit_code != 0
    assert "manifest.csv" in result.output and "byte limit of a manifest" in result.output
    assert peak < 8 * MB, f"peak {peak / MB:.1f} MB"


def test_a_manifest_lying_about_its_size_is_refused_with_little_memory(app, model, tmp_path):
    """The declared size in the central directory says 15 bytes; the data inflates to 300 MB."""
    archive = tmp_path / "liar.zip"
    _bomb(archive, "manifest.csv", 300 * MB, b"prompt_id,path\n")
    with zipfile.ZipFile(archive) as bundle:
        info = bundle.getinfo("manifest.csv")
        declared = info.file_size
    raw = bytearray(archive.read_bytes())
    needle = declared.to_bytes(4, "little")  # in the local header and the central directory
    assert raw.count(needle) == 2
    archive.write_bytes(bytes(raw).replace(needle, (15).to_bytes(4, "little")))
    result, peak = _import(app, archive)
    assert result.exit_code != 0 and "manifest.csv" in result.output
    assert peak < 8 * MB, f"peak {peak / MB:.1f} MB"


def test_many_members_just_under_the_limit_are_read_one_at_a_time(app, model, tmp_path):
    app.config["IMAGE_MAX_BYTES"] = 4 * MB
    archive = tmp_path / "many.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as bundle:
        for n in range(40):
            bundle.writestr(f"{model[0]}_{n}.png", b"\x89PNG" + bytes(4 * MB - 4))
        bundle.writestr(f"{model[1]}_1.png", (IMAGES / "ok.png").read_bytes())
        bundle.writestr(f"{model[1]}_2.png", bytes(5 * MB))
    assert archive.stat().st_size < 1 * MB
    result, peak = _import(app, archive)
    assert result.exit_code == 1, result.output  # the bad ones refused, the good one kept
    assert "1 accepted" in result.output and "exceeds the 4,194,304 byte limit" in result.output
    assert peak < 4 * 4 * MB, f"peak {peak / MB:.1f} MB"  # not 40 x 4 MB
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Image)) == 1
