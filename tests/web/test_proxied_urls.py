"""Behind deploy/'s nginx or Caddy on a port other than 80 or 443, the image URLs Arena
writes keep the port (nginx's ``$host`` dropped it: every image of a task failed to load),
and the images load through the proxy."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tests.security.test_slow_clients import _binary, _listening, _start_caddy, _start_nginx
from tests.timing import seconds
from tests.web.servers import ARENA, ROOT, free_port, server_env, stop, upgrade, wait_healthy

pytestmark = [pytest.mark.slow]


@pytest.fixture(scope="module")
def demo_instance(tmp_path_factory) -> Path:
    instance = upgrade(tmp_path_factory.mktemp("proxied") / "instance")
    env = server_env(instance) | {"ARENA_DEMO_PROMPTS": "2", "ARENA_DEMO_IMAGE_SIZE": "256",
                                  "ARENA_DEMO_IMAGES_PER_MODEL": "1",
                                  "ARENA_PRESENT_SIZES": "[96, 192]"}
    subprocess.run([ARENA, "demo", "--votes", "0"], env=env, cwd=ROOT, check=True,
                   capture_output=True, timeout=seconds(300))
    return instance


@pytest.mark.parametrize("proxy_name", ["nginx", "caddy"])
def test_image_urls_keep_the_proxys_port(proxy_name, demo_instance, tmp_path):
    _binary(proxy_name)
    start_proxy = {"nginx": _start_nginx, "caddy": _start_caddy}[proxy_name]
    folder = tmp_path / "proxy"
    folder.mkdir()
    upstream, port = free_port(), free_port()
    env = server_env(demo_instance) | {"ARENA_TRUSTED_PROXIES": "1",
                                       "ARENA_PRESENT_SIZES": "[96, 192]"}
    gunicorn = subprocess.Popen(
        [str(Path(sys.executable).parent / "gunicorn"), "-c", str(ROOT / "gunicorn.conf.py"),
         "--bind", f"127.0.0.1:{upstream}", "--pid", str(tmp_path / "gunicorn.pid")],
        env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    proxy = None
    try:
        wait_healthy(upstream, gunicorn)
        proxy = start_proxy(folder, port, upstream)
        _listening(port, proxy)
        base = f"http://127.0.0.1:{port}"
        asked = urllib.request.Request(
            f"{base}/api/v1/sessions", data=json.dumps({"criterion": "preference"}).encode(),
            headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(asked, timeout=seconds(30)) as response:
            body = json.loads(response.read())
        urls = [task[side]["url"] for task in body["tasks"] for side in ("left", "right")]
        assert urls and all(url.startswith(f"{base}/") for url in urls), urls
        for url in urls:
            with urllib.request.urlopen(url, timeout=seconds(30)) as image:
                assert image.status == 200 and image.headers["Content-Type"] == "image/webp"
    finally:
        if proxy is not None:
            stop(proxy)
        stop(gunicorn)
