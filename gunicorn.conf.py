"""gunicorn's settings for Arena: ``gunicorn -c gunicorn.conf.py`` and ``arena serve`` both
read this file (``arena serve --host/--port/--workers/--threads`` override it).

Bind address, workers and threads come from the instance like every setting (defaults <-
instance/config.py <- ``ARENA_BIND``, ``ARENA_WORKERS``, ``ARENA_THREADS``). Slow and idle
clients are the proxy's to absorb (deploy/): stock gunicorn gives a thread to a connection
until its request is read.
"""

import os

from arena.infra.serving import ACCESS_LOG_FORMAT, settings

_instance = settings()

wsgi_app = "arena:wsgi_app()"
bind = [_instance["bind"]]
workers = _instance["workers"]
threads = _instance["threads"]
worker_class = "gthread"
timeout = 30  # a worker stuck this long in one request is restarted
graceful_timeout = 30  # requests under way get this long to finish on HUP, TERM or QUIT
keepalive = 5  # seconds an idle kept-alive connection may hold a thread's slot
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1")
accesslog = "-"  # gunicorn's default is none: a format alone writes nothing
access_log_format = ACCESS_LOG_FORMAT
logger_class = "arena.infra.serving.RedactingLogger"  # no client address in the error log
# the control socket is one path per user: a second server (or the new master of a USR2
# upgrade) would take it over from the first
control_socket_disable = True


def post_worker_init(worker):
    """Says when a worker has loaded the app: a USR2 upgrade stops the old master (TERM)
    once every new worker has said so, and no request waits for a worker to load."""
    worker.log.info("Worker ready (pid: %s)", worker.pid)
