"""A server starts only on a schema at (or past) its release's newest migration."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from arena.errors import Unavailable
from arena.extensions import db
from arena.infra.instance import check_schema, schema_revisions


def _set_revision(revision: str) -> None:
    db.session.execute(text("UPDATE alembic_version SET version_num = :r"), {"r": revision})
    db.session.commit()


def test_behind_the_release_refuses_and_names_the_upgrade(app):
    with app.app_context():
        current, shipped, known = schema_revisions()
        assert current == shipped and shipped < known
        check_schema()
        _set_revision("7e78961bae08")  # (the first migration)
        with pytest.raises(Unavailable, match=r"schema is at 7e78961bae08, not .*"
                                              r"Run `arena db upgrade`"):
            check_schema()
        db.session.execute(text("DELETE FROM alembic_version"))
        db.session.commit()
        with pytest.raises(Unavailable, match="The database has no schema yet"):
            check_schema()


def test_a_schema_a_newer_release_upgraded_is_served_with_a_warning(app, caplog):
    """During a release the old servers keep serving after `arena db upgrade` has run."""
    with app.app_context():
        _set_revision("ffffffffffff")
        check_schema()
    assert "newer than this release's" in caplog.text
