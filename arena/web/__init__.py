"""Blueprints: thin views that parse a request, call one service and render."""
