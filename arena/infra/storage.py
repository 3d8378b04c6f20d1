"""Where image bytes live: a local folder (the default) or an S3-compatible bucket.

``STORAGE_URL`` picks the store: empty for the folder ``IMAGE_DIR``, ``s3://bucket/prefix``
for a bucket (AWS S3, MinIO, Cloudflare R2, Ceph ...), reached through the endpoint,
credentials and region boto3 reads from the standard ``AWS_*`` variables. Both implement the
same six methods (``put``, ``open``, ``exists``, ``size``, ``delete``, ``names``); a store
that is down or refuses Arena raises ``Unavailable``, which callers report as a 503.
"""

from __future__ import annotations

import importlib.util
import io
import logging
import os
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Protocol
from urllib.parse import urlsplit

from flask import current_app

from arena.errors import Invalid, Unavailable

log = logging.getLogger(__name__)
OUTAGE = "The image store is unavailable right now. Please try again."


class Storage(Protocol):
    def put(self, name: str, data: bytes) -> None: ...
    def open(self, name: str) -> BinaryIO: ...
    def exists(self, name: str) -> bool: ...
    def size(self, name: str) -> int: ...
    def delete(self, name: str) -> None: ...
    def names(self) -> Iterator[str]: ...


def check_name(name: str) -> str:
    """``name`` if it is one Arena writes (no path separators, no leading dot)."""
    if not name or "/" in name or "\\" in name or name.startswith("."):
        raise ValueError(f"invalid storage name {name!r}")
    return name


class LocalStorage:
    """Files under ``root``, fanned out as ``ab/cd/<name>``; writes are atomic (temp + rename),
    so a crash never leaves a half-written image behind a valid name."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)

    def __str__(self) -> str:
        return f"the folder {self.root}"

    def path(self, name: str) -> Path:
        check_name(name)
        return self.root / name[:2] / name[2:4] / name

    def put(self, name: str, data: bytes) -> None:
        target = self.path(name)
        if target.exists():
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def open(self, name: str) -> BinaryIO:
        return self.path(name).open("rb")

    def exists(self, name: str) -> bool:
        return self.path(name).exists()

    def size(self, name: str) -> int:
        return self.path(name).stat().st_size

    def delete(self, name: str) -> None:
        """Remove ``name`` if it is there."""
        self.path(name).unlink(missing_ok=True)

    def names(self) -> Iterator[str]:
        """Every stored name (files being written, ``.tmp-*``, left out)."""
        if self.root.is_dir():
            for path in self.root.rglob("*"):
                if not path.name.startswith(".") and path.is_file():
                    yield path.name


class S3Storage:
    """Objects ``<prefix>/<name>`` in an S3-compatible bucket. Every failure to reach the
    store (refused or timed-out connections, 5xx after boto3's retries, credentials or a
    bucket it refuses) raises ``Unavailable``; a missing object is a ``FileNotFoundError``,
    as with files. A PUT is atomic: an object is whole or absent."""

    CONNECT_TIMEOUT_S = 3
    READ_TIMEOUT_S = 5
    ATTEMPTS = 2  # (the first try and one retry: a dead store fails a request in seconds)

    def __init__(self, url: str, *, connect_timeout: float = CONNECT_TIMEOUT_S,
                 read_timeout: float = READ_TIMEOUT_S, attempts: int = ATTEMPTS):
        self.bucket, self.prefix = parse_s3_url(url)
        if importlib.util.find_spec("boto3") is None:
            raise RuntimeError(f"STORAGE_URL is {url} but boto3 is not installed: "
                               "pip install 'arena[s3]'")
        self.timeouts = (connect_timeout, read_timeout, attempts)
        self._client = None
        self._lock = threading.Lock()

    def __str__(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}" if self.prefix else f"s3://{self.bucket}"

    @property
    def client(self):
        """The boto3 client, made on first use (importing boto3 and building a client takes
        a quarter of a second that commands not touching images need not pay). Endpoint,
        credentials and region are boto3's own: ``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``
        ... or its config files. One client serves every thread (boto3's clients are
        thread-safe)."""
        if self._client is None:
            with self._lock:  # (two threads' first requests make one client)
                if self._client is None:
                    self._client = self._make_client()
        return self._client

    def _make_client(self):
        import boto3
        from botocore.config import Config

        connect, read, attempts = self.timeouts
        return boto3.session.Session().client("s3", config=Config(
            connect_timeout=connect, read_timeout=read,
            retries={"total_max_attempts": attempts, "mode": "standard"},
            max_pool_connections=32))  # (the embedded server's 8 workers x 4 threads at most)

    def key(self, name: str) -> str:
        check_name(name)
        return f"{self.prefix}/{name}" if self.prefix else name

    @contextmanager
    def _reaching(self, name: str | None = None):
        """Map boto3's errors: missing object -> FileNotFoundError, the rest -> Unavailable
        (with the cause in the log, not in the message voters see)."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            yield
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code")
            if name is not None and code in ("404", "NoSuchKey"):
                raise FileNotFoundError(f"{self}: no object {name}") from exc
            log.error("image store %s: %s", self, exc)
            raise Unavailable(OUTAGE) from exc
        except BotoCoreError as exc:
            log.error("image store %s: %s", self, exc)
            raise Unavailable(OUTAGE) from exc

    def put(self, name: str, data: bytes) -> None:
        # (no existence check first: a name is its content, so writing it again changes
        # nothing, and a HEAD would cost a round trip on every new image)
        with self._reaching():
            self.client.put_object(Bucket=self.bucket, Key=self.key(name), Body=data,
                                   ContentType="image/webp")

    def open(self, name: str) -> BinaryIO:
        """The object's bytes, read whole (an image is a few MB at most) so that a store
        failing part way raises here, as ``Unavailable``, and not in the caller's read."""
        with self._reaching(name):
            body = self.client.get_object(Bucket=self.bucket, Key=self.key(name))["Body"]
            with body:
                return io.BytesIO(body.read())

    def exists(self, name: str) -> bool:
        try:
            self.size(name)
        except FileNotFoundError:
            return False
        return True

    def size(self, name: str) -> int:
        with self._reaching(name):
            head = self.client.head_object(Bucket=self.bucket, Key=self.key(name))
        return head["ContentLength"]

    def delete(self, name: str) -> None:
        """Remove ``name`` if it is there (S3 answers a missing key's DELETE alike)."""
        with self._reaching():
            self.client.delete_object(Bucket=self.bucket, Key=self.key(name))

    def names(self) -> Iterator[str]:
        """Every stored name under the prefix, a page of a thousand per request."""
        start = f"{self.prefix}/" if self.prefix else ""
        with self._reaching():
            pages = self.client.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket, Prefix=start)
            for page in pages:
                for item in page.get("Contents", ()):
                    name = item["Key"][len(start):]
                    if name and "/" not in name:
                        yield name


def parse_s3_url(url: str) -> tuple[str, str]:
    """``s3://bucket/prefix`` as (bucket, prefix without surrounding slashes). Raises
    Invalid for anything else."""
    parts = urlsplit(url)
    if parts.scheme != "s3" or not parts.netloc or parts.query or parts.fragment:
        raise Invalid(f"{url!r} is not an image store: write local, s3://bucket or "
                      "s3://bucket/prefix")
    return parts.netloc, parts.path.strip("/")


def open_storage(url: str | None, image_dir: str | os.PathLike) -> Storage:
    """The store ``url`` names: ``s3://bucket/prefix``, or the folder ``image_dir`` for an
    empty url or ``local``. Raises Invalid for anything else."""
    if not url or url == "local":
        return LocalStorage(image_dir)
    return S3Storage(url)


def stored_names(source: Storage, target: Storage) -> list[str]:
    """Every name in ``source``, to copy into ``target``. Raises Invalid when they are the
    same store."""
    if str(source) == str(target):
        raise Invalid(f"the images are in {source} already")
    return sorted(source.names())


def copy_all(source: Storage, target: Storage, names: list[str],
             progress: Callable[[int], None] | None = None) -> tuple[int, int]:
    """Copy each of ``names`` from ``source`` that ``target`` lacks; returns (copied, already
    there). Resumable: run again, it copies only what an earlier run did not."""
    have = set(target.names())
    copied = 0
    for name in names:
        if name not in have:
            with source.open(name) as fh:
                target.put(name, fh.read())
            copied += 1
        if progress is not None:
            progress(1)
    return copied, len(names) - copied


def get_storage() -> Storage:
    return current_app.extensions["arena_storage"]
