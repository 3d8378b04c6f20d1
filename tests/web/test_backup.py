"""arena backup / arena restore: a backup taken from a live instance restores into a new
one with every row, image file and secret the same, and the same rankings; a restore never
overwrites data, and a damaged or crafted backup is refused before anything is written."""

from __future__ import annotations

import io
import json
import sqlite3
import stat
import tarfile
from pathlib import Path

from arena import create_app
from arena.analysis.leaderboard import rank_models
from arena.extensions import db
from tests.conftest import app_config
from tests.factories import make_campaign, vote_as


def _rows(database: Path) -> dict[str, list]:
    with sqlite3.connect(database) as conn:
        tables = [r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
        return {t: conn.execute(f"SELECT * FROM {t} ORDER BY rowid").fetchall()
                for t in tables if t != "sqlite_sequence"}


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in folder.rglob("*") if p.is_file()}


def _new_instance(tmp_path: Path, name: str, made: bool = True):
    folder = tmp_path / name
    if made:
        folder.mkdir()
    return create_app(app_config(folder)), folder


def test_backup_restores_into_a_new_instance_identically(app, tmp_path):
    with app.app_context():
        make_campaign()
        vote_as({"country": "FR"}, ["model-0", "model-1", "model-2"], sessions=4)
        before = rank_models("preference", rounds=0).records()
    target = tmp_path / "backups" / "arena.tar.gz"
    made = app.test_cli_runner().invoke(args=["backup", str(target)])
    assert made.exit_code == 0, made.output
    assert "votes" in made.output and stat.S_IMODE(target.stat().st_mode) == 0o600
    assert not list(target.parent.glob(".arena-backup-*"))  # nothing left behind
    # (a folder that is not there yet, as `ARENA_INSTANCE_PATH=/srv/new arena restore`: the
    # README walk met a FileNotFoundError there)
    fresh, folder = _new_instance(tmp_path, "restored", made=False)
    done = fresh.test_cli_runner().invoke(args=["restore", str(target)])
    assert done.exit_code == 0, done.output
    assert _rows(folder / "arena.sqlite3") == _rows(tmp_path / "arena.sqlite3")
    assert _files(folder / "images") == _files(tmp_path / "images")
    with fresh.app_context():
        after = rank_models("preference", rounds=0).records()
        db.session.remove()
        db.engine.dispose()
    assert after == before and sum(m["votes"] for m in after) > 0
    # a second restore would overwrite what is there now: refused, nothing changed
    again = fresh.test_cli_runner().invoke(args=["restore", str(target)])
    assert again.exit_code == 5 and "already holds data" in again.output


def _crafted(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_damaged_or_crafted_backups_are_refused_before_writing(app, tmp_path):
    with app.app_context():
        make_campaign(gold=False, n_prompts=1)
    good = tmp_path / "good.tar"
    assert app.test_cli_runner().invoke(args=["backup", str(good)]).exit_code == 0
    with tarfile.open(good) as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar.getmembers()}
    manifest = json.loads(members["arena-backup.json"])
    cases = {
        "escape": {**members, "../../outside.txt": b"x"},
        "absolute": {**members, "/tmp/outside.txt": b"x"},
        "stranger": {**members, "notes.txt": b"x"},
        "damaged": {**members, "arena.sqlite3": members["arena.sqlite3"][:-4096]},
        "format": {**members, "arena-backup.json": json.dumps({**manifest, "format": 9})
                   .encode()},
        "no manifest": {k: v for k, v in members.items() if k != "arena-backup.json"},
    }
    fresh, folder = _new_instance(tmp_path, "target")
    runner = fresh.test_cli_runner()
    for label, crafted in cases.items():
        result = runner.invoke(args=["restore", str(_crafted(tmp_path / f"{label}.tar",
                                                            crafted))])
        assert result.exit_code == 1, (label, result.output)
        assert not (folder / "arena.sqlite3").exists(), label
        assert not (folder / "images").exists(), label
        assert not (tmp_path.parent / "outside.txt").exists()
    (tmp_path / "junk.tar").write_bytes(b"not a tar file")
    junk = runner.invoke(args=["restore", str(tmp_path / "junk.tar")])
    assert junk.exit_code == 1 and "not a readable backup" in junk.output
    assert runner.invoke(args=["restore", str(good)]).exit_code == 0  # the real one works


def test_a_restored_instance_is_private_to_its_user(app, tmp_path):
    """Under the usual umask (022), a restored instance folder came out 0755: anyone on
    the machine could list it and read its images. Every folder restored is 0700 and every
    file 0600, whether the folder existed (made 0755 by hand) or restore made it."""
    with app.app_context():
        make_campaign(gold=False, n_prompts=1)
    target = tmp_path / "arena.tar"
    assert app.test_cli_runner().invoke(args=["backup", str(target)]).exit_code == 0
    for name, made in (("new-folder", False), ("existing-folder", True)):
        (tmp_path / name).mkdir()
        fresh, folder = _new_instance(tmp_path / name, "instance", made=made)
        if made:
            folder.chmod(0o755)
        done = fresh.test_cli_runner().invoke(args=["restore", str(target)])
        assert done.exit_code == 0, done.output
        with fresh.app_context():
            db.session.remove()
            db.engine.dispose()
        restored = [folder, *folder.rglob("*")]
        assert len([p for p in restored if p.is_file()]) > 3
        modes = {p.relative_to(folder).as_posix(): stat.S_IMODE(p.stat().st_mode)
                 for p in restored}
        assert {p: m for p, m in modes.items() if (folder / p).is_dir() and m != 0o700} == {}
        assert {p: m for p, m in modes.items()
                if (folder / p).is_file() and p in _files(folder) and m != 0o600
                and not p.startswith("arena.sqlite3-")} == {}
