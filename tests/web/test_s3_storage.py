"""Images in an S3-compatible bucket (STORAGE_URL=s3://...), against a real S3 server (moto's)
on 127.0.0.1: uploads, serving, a store that goes down or fails part way, the demo, and
`arena storage migrate` both ways."""

from __future__ import annotations

import contextlib
import http.client
import io
import socket
import threading
import time
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import pytest
from sqlalchemy import func, select, text

from arena.campaigns import campaigns
from arena.catalog import images
from arena.errors import Unavailable
from arena.extensions import db
from arena.infra import jobs
from arena.infra.storage import OUTAGE, S3Storage
from arena.models import Image, Prompt
from tests import timing
from tests.conftest import job_worker_of
from tests.datasets import IMAGES
from tests.factories import make_campaign, make_model, make_owner, make_prompt_set
from tests.timing import seconds

from .helpers import bearer, presented_in
from .servers import free_port


class FlakyStore:
    """A proxy in front of the test S3 server that fails when told to, as a store does:
    stopped (connections refused), or answering 503 once ``puts`` more PUTs have passed
    (to PUTs only, or to every request)."""

    def __init__(self, upstream: str):
        self.upstream = urlsplit(upstream).netloc
        self.port = free_port()
        self.puts_left: int | None = None
        self.only_puts = True
        self.connections: set[socket.socket] = set()
        self.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), partial(_Forward, self))
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        """Stop listening and drop the open connections (kept alive, a client would go on
        using them)."""
        self.server.shutdown()
        self.server.server_close()
        for connection in list(self.connections):
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)

    def fail_after(self, puts: int, only_puts: bool = True) -> None:
        self.puts_left, self.only_puts = puts, only_puts

    def heal(self) -> None:
        self.puts_left = None

    def failing(self, method: str) -> bool:
        if self.puts_left is None:
            return False
        if self.puts_left > 0:
            if method == "PUT":
                self.puts_left -= 1
            return False
        return method == "PUT" or not self.only_puts


class _Forward(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    FAILED = b"<Error><Code>ServiceUnavailable</Code><Message>down</Message></Error>"

    def __init__(self, store: FlakyStore, *args, **kwargs):
        self.store = store
        super().__init__(*args, **kwargs)

    def setup(self) -> None:
        super().setup()
        self.store.connections.add(self.connection)

    def finish(self) -> None:
        self.store.connections.discard(self.connection)
        super().finish()

    def forward(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.store.failing(self.command):
            self.reply(503, [("Content-Type", "application/xml")], self.FAILED)
            return
        upstream = http.client.HTTPConnection(self.store.upstream, timeout=seconds(10))
        try:
            upstream.request(self.command, self.path, body=body, headers=dict(self.headers))
            answer = upstream.getresponse()
            self.reply(answer.status, answer.getheaders(), answer.read())
        finally:
            upstream.close()

    def reply(self, status: int, headers: list[tuple[str, str]], data: bytes) -> None:
        self.send_response(status)
        for name, value in headers:
            # (a HEAD's Content-Length is the object's, and is what size() reads)
            if name.lower() not in ("connection", "transfer-encoding", "date", "server") \
                    and (name.lower() != "content-length" or self.command == "HEAD"):
                self.send_header(name, value)
        if self.command != "HEAD":
            self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_PUT = do_HEAD = do_DELETE = do_POST = forward

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def flaky_store(s3_server, s3_bucket, monkeypatch):
    """The bucket, reached through a :class:`FlakyStore`."""
    store = FlakyStore(s3_server)
    monkeypatch.setenv("AWS_ENDPOINT_URL", store.url)
    yield store
    store.stop()


def live_campaign(app) -> dict:
    """Two owners' models in a published campaign on one prompt, and their owners' tokens."""
    with app.app_context():
        make_prompt_set("s", ["a red cube"])
        tokens = {}
        for owner_name, model in (("acme", "Acme-1"), ("globex", "Globex-1")):
            owner, token = make_owner(owner_name)
            make_model(model, owner)
            tokens[model] = bearer(token)
        campaigns.publish(campaigns.create_campaign("Live", "s", ["Acme-1", "Globex-1"]))
        return {"prompt": db.session.scalar(select(Prompt.id)), **tokens}


def upload(client, owners: dict, model: str, name: str, **kwargs):
    return client.post(f"/api/v1/models/{model}/images", headers=owners[model],
                       data={"prompt_id": str(owners["prompt"]),
                             "image": (io.BytesIO((IMAGES / name).read_bytes()), name)},
                       content_type="multipart/form-data", **kwargs)


def task_urls(client) -> list[str]:
    """Every image URL of a new voting session's tasks (paths, every size)."""
    body = client.post("/api/v1/sessions", json={"criterion": "preference"}).json
    return sorted(urlsplit(url).path for task in body["tasks"] for side in ("left", "right")
                  for url in task[side]["urls"].values())


def served(client, urls: list[str]) -> dict[str, bytes]:
    responses = {url: client.get(url) for url in urls}
    assert all(r.status_code == 200 for r in responses.values())
    return {url: r.data for url, r in responses.items()}


def expected_objects(app) -> set[str]:
    """What the committed image rows need stored: each one's full file and its variants."""
    with app.app_context():
        shas = db.session.scalars(select(Image.sha256).distinct()).all()
    sizes = app.config["PRESENT_SIZES"]
    return ({images.full_name(s) for s in shas}
            | {images.presented_name(s, size) for s in shas for size in sizes})


def image_rows(app) -> int:
    with app.app_context():
        return db.session.scalar(select(func.count()).select_from(Image))


def test_uploads_go_to_the_bucket_and_are_served_from_it(make_app, s3_bucket, tmp_path):
    app = make_app(STORAGE_URL=s3_bucket.url)
    owners = live_campaign(app)
    client = app.test_client()
    assert upload(client, owners, "Acme-1", "ok.png").status_code == 201
    assert upload(client, owners, "Globex-1", "ok.jpg").status_code == 201
    stored = s3_bucket.objects()
    assert set(stored) == expected_objects(app) and len(stored) == 6  # 2 x (full + 2 sizes)
    again = upload(client, owners, "Acme-1", "ok.png")
    assert again.status_code == 200 and again.json["duplicate"] is True
    assert s3_bucket.objects() == stored and image_rows(app) == 2
    shown = served(client, task_urls(client))
    assert all(presented_in(data, stored.values()) for data in shown.values())
    assert not (tmp_path / "images").exists() and not list(tmp_path.rglob("*.webp"))


def test_a_store_that_is_down_answers_503_and_keeps_nothing_of_the_upload(make_app,
                                                                       flaky_store, s3_bucket):
    app = make_app(STORAGE_URL=s3_bucket.url)
    owners = live_campaign(app)
    client = app.test_client()
    assert upload(client, owners, "Acme-1", "ok.png").status_code == 201
    assert upload(client, owners, "Globex-1", "ok.jpg").status_code == 201
    urls = task_urls(client)
    flaky_store.stop()  # connections refused
    refused = upload(client, owners, "Acme-1", "ok.webp")
    assert refused.status_code == 503 and refused.json["error"] == OUTAGE
    image = client.get(urls[0])
    assert image.status_code == 503 and OUTAGE in image.get_data(as_text=True)
    flaky_store.start()
    assert image_rows(app) == 2 and set(s3_bucket.objects()) == expected_objects(app)
    assert upload(client, owners, "Acme-1", "ok.webp").status_code == 201  # sent again
    assert image_rows(app) == 3 and set(s3_bucket.objects()) == expected_objects(app)
    assert client.get(urls[0]).status_code == 200


def test_a_store_failing_part_way_through_an_upload_keeps_none_of_it(make_app, flaky_store,
                                                                    s3_bucket):
    app = make_app(STORAGE_URL=s3_bucket.url)
    owners = live_campaign(app)
    client = app.test_client()
    flaky_store.fail_after(puts=1)  # one presented variant written, the next refused
    failed = upload(client, owners, "Acme-1", "ok.png")
    assert failed.status_code == 503 and failed.json["error"] == OUTAGE
    assert image_rows(app) == 0 and s3_bucket.objects() == {}  # the written one deleted
    flaky_store.fail_after(puts=1, only_puts=False)  # and then down for everything
    failed = upload(client, owners, "Acme-1", "ok.png", buffered=False)
    failed.close()  # the response has gone: the deletion is tried again, still refused
    assert failed.status_code == 503 and len(s3_bucket.objects()) == 1
    flaky_store.heal()
    with app.app_context():
        assert jobs.pending() == {"delete-unnamed": 1}  # (due in a second: not hammered)
    with job_worker_of(app):
        deadline = time.monotonic() + timing.seconds(30)
        while s3_bucket.names():
            assert time.monotonic() < deadline, "the worker did not delete the file"
            time.sleep(0.1)
    assert image_rows(app) == 0 and s3_bucket.objects() == {}
    assert upload(client, owners, "Acme-1", "ok.png").status_code == 201
    assert set(s3_bucket.objects()) == expected_objects(app)


def test_an_upload_whose_row_fails_leaves_no_object(make_app, s3_bucket):
    app = make_app(STORAGE_URL=s3_bucket.url)
    owners = live_campaign(app)
    client = app.test_client()
    assert upload(client, owners, "Acme-1", "ok.png").status_code == 201
    kept = s3_bucket.objects()
    with app.app_context():
        db.session.execute(text("CREATE TRIGGER fail_store BEFORE INSERT ON image "
                                "BEGIN SELECT RAISE(ABORT, 'constraint failed'); END"))
        db.session.commit()
    assert upload(client, owners, "Acme-1", "ok.webp").status_code >= 400
    assert s3_bucket.objects() == kept  # nothing of the failed upload; the stored one kept
    assert image_rows(app) == 1


def test_a_store_that_does_not_answer_fails_within_its_timeout(s3_bucket, monkeypatch):
    with socket.socket() as silent:  # accepts connections, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{silent.getsockname()[1]}")
        store = S3Storage(s3_bucket.url, read_timeout=0.5, attempts=1)
        assert store.client is not None  # (built before the clock starts: a busy machine
        started = time.monotonic()       # takes seconds to load botocore's models)
        with pytest.raises(Unavailable, match="image store is unavailable"):
            store.exists(images.full_name("0" * 64))
        assert time.monotonic() - started < 3


def test_the_demo_writes_no_image_to_the_instance_disk(make_app, s3_bucket, tmp_path):
    app = make_app(STORAGE_URL=s3_bucket.url, DEMO_PROMPTS=2, DEMO_IMAGES_PER_MODEL=1,
                   GOLD_MAX_DAMAGED=2)
    runner = app.test_cli_runner()
    result = runner.invoke(args=["demo", "--votes", "20"])
    assert result.exit_code == 0, result.output
    stored = set(s3_bucket.objects())
    assert stored and stored == expected_objects(app)
    assert not (tmp_path / "images").exists() and not list(tmp_path.rglob("*.webp"))
    backup = runner.invoke(args=["backup", str(tmp_path / "arena.tar")])
    assert backup.exit_code == 1 and f"the images are in {s3_bucket.url}" in backup.output
    assert not (tmp_path / "arena.tar").exists()


def test_migrate_to_a_bucket_and_back_copies_everything_once(make_app, s3_bucket, tmp_path):
    local = make_app()
    with local.app_context():
        make_campaign(n_prompts=1, n_models=2, images_per_model=1, gold=False)
    client = local.test_client()
    urls = task_urls(client)
    shown = served(client, urls)
    folder = {p.name: p.read_bytes() for p in (tmp_path / "images").rglob("*") if p.is_file()}
    assert set(folder) == expected_objects(local)

    to_bucket = local.test_cli_runner().invoke(args=["storage", "migrate", "--to",
                                                     s3_bucket.url])
    assert to_bucket.exit_code == 0, to_bucket.output
    assert f"{len(folder)} copied, 0 already in {s3_bucket.url}" in to_bucket.output
    assert s3_bucket.objects() == folder
    again = local.test_cli_runner().invoke(args=["storage", "migrate", "--to", s3_bucket.url])
    assert f"0 copied, {len(folder)} already" in again.output

    in_bucket = make_app(STORAGE_URL=s3_bucket.url, IMAGE_DIR=str(tmp_path / "back"))
    assert served(in_bucket.test_client(), urls) == shown  # the same bytes as from the folder
    runner = in_bucket.test_cli_runner()
    back = runner.invoke(args=["storage", "migrate", "--to", "local"])
    assert back.exit_code == 0, back.output
    assert f"{len(folder)} copied, 0 already in the folder {tmp_path / 'back'}" in back.output
    copied = {p: p.read_bytes() for p in (tmp_path / "back").rglob("*") if p.is_file()}
    assert {p.name: data for p, data in copied.items()} == folder
    for path in list(copied)[:2]:  # an interrupted copy: run again, it copies what is missing
        path.unlink()
    resumed = runner.invoke(args=["storage", "migrate", "--to", "local"])
    assert f"2 copied, {len(folder) - 2} already" in resumed.output
    same = runner.invoke(args=["storage", "migrate", "--to", f"{s3_bucket.url}/"])
    assert same.exit_code == 1 and "already" in same.output
    other = runner.invoke(args=["storage", "migrate", "--to", "ftp://example.org/x"])
    assert other.exit_code == 1 and "not an image store" in other.output
