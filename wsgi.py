"""WSGI entry point: ``gunicorn wsgi:app`` (or ``arena serve``).

Refuses to start without persistent secret keys (see ``arena.wsgi_app``)."""

from arena import wsgi_app

app = wsgi_app()
