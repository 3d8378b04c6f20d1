"""WSGI entry point: ``gunicorn wsgi:app`` (or ``arena serve``)."""

from arena import create_app

app = create_app()
