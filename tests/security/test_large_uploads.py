"""A large image upload: its memory is bounded by its decoded size, and storing it is atomic.

A 126 KB PNG of 9,999 x 4,000 pixels (inside the pixel limits) cost a worker about 910 MB
while it was checked and re-encoded (copies of the full picture at every step, then a WebP of
all 40 million pixels), and under load the upload ended in a 503 that left its image files on
disk with no row naming them. Here the PNG is built for real, uploaded through the API in a
fresh process whose peak memory is read from the kernel, and a store that fails after its
files are written (a real database error) leaves no file behind."""

from __future__ import annotations

import io
import struct
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path

import pytest
from sqlalchemy import event, func, select, text

from arena.extensions import db
from arena.models import Image, Prompt
from tests.conftest import kill_backend
from tests.datasets import IMAGES
from tests.factories import make_model, make_owner, make_prompt_set
from tests.timing import SCALE
from tests.web.helpers import bearer

ROOT = Path(__file__).resolve().parents[2]
MB = 1 << 20


def wide_png(width: int = 9_999, height: int = 4_000, variant: int = 0) -> bytes:
    """An RGB PNG of ``width`` x ``height``, written row by row (never a whole picture in
    memory): a gradient with a few stripes (their place set by ``variant``), about 126 KB."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return (struct.pack(">I", len(body)) + kind + body
                + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF))

    packer = zlib.compressobj(9)
    parts = []
    for y in range(height):
        shade = bytes((y * 255 // height, 128, 255 - y * 255 // height))
        row = shade * width if (y + 37 * variant) % 400 else b"\xff\x00\x00" * width
        parts.append(packer.compress(b"\x00" + row))
    parts.append(packer.flush())
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", b"".join(parts))
            + chunk(b"IEND", b""))


UPLOAD = textwrap.dedent("""
    import io, resource, sys
    from pathlib import Path
    sys.path.insert(0, sys.argv[1])
    from tests.conftest import app_config
    from tests.datasets import IMAGES
    from tests.factories import make_model, make_owner, make_prompt_set
    from arena import create_app
    from arena.infra.instance import upgrade_schema

    app = create_app(app_config(Path(sys.argv[2]), PRESENT_SIZES=(384, 768, 1024),
                                HYPE_PRESENT_SIZE=768))  # (the shipped sizes)
    with app.app_context():
        upgrade_schema()
        make_prompt_set("s", ["a", "b"])
        owner, token = make_owner("acme")
        make_model("Acme-1", owner)
    client = app.test_client()

    def send(data, prompt, name):
        return client.post("/api/v1/models/Acme-1/images",
                           headers={"Authorization": "Bearer " + token},
                           data={"prompt_id": str(prompt), "image": (io.BytesIO(data), name)},
                           content_type="multipart/form-data")

    warm = send((IMAGES / "ok.png").read_bytes(), 1, "1_1.png")  # every library loaded
    assert warm.status_code == 201, warm.get_data(as_text=True)
    def resident():
        return int(Path("/proc/self/statm").read_text().split()[1]) * 4096 // (1 << 20)

    before, settled = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, resident()
    for k, name in enumerate(sys.argv[3:]):  # one after another, each a new picture
        response = send(Path(name).read_bytes(), 1 + k % 2, f"{2 + k}_1.png")
        grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024
        print(response.status_code, grown, resident() - settled,
              response.get_data(as_text=True))
""")


def test_wide_pngs_one_after_another_cost_no_more_than_one_decoded_size(tmp_path):
    pngs = []
    for k in range(3):
        pngs.append(tmp_path / f"wide{k}.png")
        pngs[-1].write_bytes(wide_png(variant=k))
    assert pngs[0].stat().st_size < 200_000
    done = subprocess.run([sys.executable, "-c", UPLOAD, str(ROOT), str(tmp_path),
                           *map(str, pngs)],
                          capture_output=True, text=True, timeout=300 * SCALE, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [line.split(" ", 3) for line in done.stdout.strip().splitlines()
            if line[:3].isdigit()]
    assert len(rows) == 3, done.stdout
    for status, grown_mb, kept_mb, body in rows:
        assert status == "201", body
        # decoded: 9,999 x 4,000 pixels x 4 bytes (Pillow's RGB) = 160 MB; nothing else as
        # large, and nothing of it kept once stored (however many come)
        assert int(grown_mb) < 240, f"the uploads grew the process by {grown_mb} MB"
        assert int(kept_mb) < 60, f"the process kept {kept_mb} MB after an upload"


def _owner(app) -> tuple[list[int], dict]:
    with app.app_context():
        make_prompt_set("s", ["a red cube", "a blue ball"])
        owner, token = make_owner("acme")
        make_model("Acme-1", owner)
        prompts = db.session.scalars(select(Prompt.id).order_by(Prompt.id)).all()
    return prompts, bearer(token)


@pytest.fixture
def owner(app):
    return _owner(app)


def _send(client, auth, prompt: int, name: str):
    return client.post("/api/v1/models/Acme-1/images", headers=auth,
                       data={"prompt_id": str(prompt),
                             "image": (io.BytesIO((IMAGES / name).read_bytes()), name)},
                       content_type="multipart/form-data")


def _files(app) -> set[str]:
    return {p.name for p in Path(app.config["IMAGE_DIR"]).rglob("*") if p.is_file()}


@pytest.mark.parametrize("failure", [
    "SELECT RAISE(ABORT, 'constraint failed')",  # the database refuses the row
    "INSERT INTO no_such_table VALUES (1)",  # the database fails under the row
])
def test_a_store_that_fails_after_writing_its_files_leaves_none(app, owner, failure):
    prompts, auth = owner
    client = app.test_client()
    assert _send(client, auth, prompts[0], "ok.png").status_code == 201
    kept = _files(app)
    assert kept  # the stored image's full file and presented variants
    with app.app_context():
        db.session.execute(text(f"CREATE TRIGGER fail_store BEFORE INSERT ON image "
                                f"BEGIN {failure}; END"))
        db.session.commit()
    response = _send(client, auth, prompts[1], "ok.webp")
    assert response.status_code >= 400, response.get_data(as_text=True)
    assert _files(app) == kept  # nothing of the failed upload; the stored one untouched
    with app.app_context():
        db.session.execute(text("DROP TRIGGER fail_store"))
        db.session.commit()
        assert db.session.scalar(select(func.count()).select_from(Image)) == 1
    assert _send(client, auth, prompts[1], "ok.webp").status_code == 201  # sent again: kept
    assert len(_files(app)) == 2 * len(kept)


@pytest.mark.postgres
def test_an_upload_whose_database_connection_dies_mid_store_leaves_no_file(pg_app):
    """As under load: the connection is killed (a PostgreSQL restart) as the row is written,
    after the files; the owner gets a 503 asking to retry, and the disk holds nothing of it."""
    prompts, auth = _owner(pg_app)
    client = pg_app.test_client()
    assert _send(client, auth, prompts[0], "ok.png").status_code == 201
    kept = _files(pg_app)
    with pg_app.app_context():
        engine = db.engine
    killed = []

    def kill_at_the_row(conn, cursor, statement, *args):
        if not killed and statement.lstrip().upper().startswith("INSERT INTO IMAGE"):
            killed.append(conn.connection.dbapi_connection.info.backend_pid)
            kill_backend(killed[0])

    event.listen(engine, "before_cursor_execute", kill_at_the_row)
    try:
        response = _send(client, auth, prompts[1], "ok.webp")
    finally:
        event.remove(engine, "before_cursor_execute", kill_at_the_row)
    assert killed and response.status_code == 503, response.get_data(as_text=True)
    assert _files(pg_app) == kept
    assert _send(client, auth, prompts[1], "ok.webp").status_code == 201  # the retry stores it
    assert len(_files(pg_app)) == 2 * len(kept)
