"""Read by ``gunicorn wsgi:app`` run from the checkout (gunicorn loads ./gunicorn.conf.py):
the same access log as ``arena serve``, without client addresses."""

from arena.cli.server import ACCESS_LOG_FORMAT, WORKER_CLASS

accesslog = "-"  # gunicorn's default is none: a format alone writes nothing
access_log_format = ACCESS_LOG_FORMAT
worker_class = WORKER_CLASS
