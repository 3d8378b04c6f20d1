"""Hot-path statements run on the database driver directly.

The vote path's statements are built once (``functools.cache``) with typed named parameters
(:func:`arena.infra.database.param`). Run through ``Session.execute``, each still paid
SQLAlchemy's per-execution work: its cache key walked, an execution context and a result
built, the ORM's hooks. py-spy put that at a third of a vote's server time, and the
database driver's own work at a twentieth (benchmarks/request_cost.py). :func:`run` compiles a
statement once per dialect into its SQL text, its parameter order, its bind processors and
its result processors, and runs it on the session's own connection, in the session's
transaction, with the driver's cursor. What SQLAlchemy does on the way is kept: the same
SQL, the same conversions of values both ways (datetimes on SQLite), the driver's errors
wrapped as SQLAlchemy's (``IntegrityError``, ``OperationalError``: what the callers catch),
and the engine's ``before_cursor_execute`` listeners called (Server-Timing's count).

Statements that need SQLAlchemy at execution time are refused when first compiled: Python
column defaults or ``onupdate`` (prefetch), expanding ``IN`` lists, ``literal_execute``.
"""

from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass
from typing import Any

from flask import current_app
from sqlalchemy import exc
from sqlalchemy.sql import ClauseElement

from arena.extensions import db


@dataclass
class _Compiled:
    sql: str
    positional: tuple[str, ...] | None  # bind names in order (qmark drivers), else None
    constants: dict[str, Any]  # binds with a value of their own (a literal in the statement)
    processors: dict[str, Any]  # bind name -> processor
    row: type | None  # the row class of a statement that returns rows
    types: tuple  # per result column, its SQLAlchemy type
    results: tuple | None = None  # per result column, its processor or None (first run)


class Outcome:
    """What a statement run by :func:`run` returned: ``rowcount``, its rows, and
    ``lastrowid`` (the id an INSERT gave its row, on SQLite)."""

    __slots__ = ("lastrowid", "rowcount", "rows")

    def __init__(self, rowcount: int, rows: list, lastrowid: int | None = None):
        self.rowcount, self.rows, self.lastrowid = rowcount, rows, lastrowid

    def first(self):
        return self.rows[0] if self.rows else None

    def all(self) -> list:
        return self.rows

    def scalar(self):
        return self.rows[0][0] if self.rows else None


_compiled: dict[tuple[int, str], tuple[ClauseElement, _Compiled]] = {}


def _compile(statement: ClauseElement, dialect) -> _Compiled:
    key = (id(statement), dialect.name)
    known = _compiled.get(key)
    if known is not None and known[0] is statement:
        return known[1]
    compiled = statement.compile(dialect=dialect)
    if (compiled.insert_prefetch or compiled.update_prefetch or compiled.post_compile_params
            or compiled.literal_execute_params or compiled.escaped_bind_names):
        raise ValueError("arena.infra.prepared.run: this statement needs SQLAlchemy when it "
                         "runs (a Python default, an expanding IN, an escaped name); run it "
                         f"with db.session.execute: {compiled.string[:80]}")
    constants = {}
    for bind, name in compiled.bind_names.items():
        if not bind.required:
            constants[name] = bind.effective_value
    columns = compiled._result_columns
    row = namedtuple("Row", [c[0] for c in columns], rename=True) if columns else None
    made = _Compiled(
        sql=compiled.string,
        positional=tuple(compiled.positiontup) if dialect.positional else None,
        constants=constants, processors=dict(compiled._bind_processors), row=row,
        types=tuple(c[3] for c in columns or ()))
    _compiled[key] = (statement, made)
    return made


def _through_sqlalchemy(statement: ClauseElement, params: dict | None) -> Outcome:
    """(PREPARED_STATEMENTS off.) An ORM-enabled SELECT comes back as an iterator result,
    without rowcount or lastrowid; a DML statement as a cursor result."""
    result = db.session.execute(statement, params)
    if not hasattr(result, "returns_rows"):
        return Outcome(-1, result.all())
    sqlite = db.session.get_bind().dialect.name == "sqlite"  # (psycopg has no lastrowid)
    lastrowid = result.lastrowid if sqlite else None
    return Outcome(result.rowcount, result.all() if result.returns_rows else [], lastrowid)


def run(statement: ClauseElement, params: dict | None = None) -> Outcome:
    """Run ``statement`` (built once: it is compiled once per dialect, keyed by identity)
    with ``params`` in the current session's transaction, on the driver's cursor. Returns
    its rowcount and its rows (named tuples, values converted as SQLAlchemy converts them).

    Raises
    ------
    sqlalchemy.exc.DBAPIError
        The driver's error, wrapped as SQLAlchemy wraps it (IntegrityError, ...).
    """
    if not current_app.config["PREPARED_STATEMENTS"]:
        return _through_sqlalchemy(statement, params)
    connection, compiled = _connection_and_compiled(statement)
    arguments = _arguments(compiled, params)
    cursor = connection.connection.dbapi_connection.cursor()
    try:
        rows = _execute(connection, cursor, compiled.sql, arguments, many=False,
                        fetch=compiled.row is not None)
        if rows:
            rows = _converted(compiled, rows, cursor, connection.dialect)
        return Outcome(cursor.rowcount, rows, getattr(cursor, "lastrowid", None))
    finally:
        cursor.close()


def _converted(compiled: _Compiled, rows: list, cursor, dialect) -> list:
    """The driver's rows as named tuples, values converted as SQLAlchemy converts them. The
    cursor's description is read on the first run only (psycopg builds it afresh each time
    it is asked: 4% of a vote request on PostgreSQL, py-spy on request_cost.py)."""
    if compiled.results is None:  # (the driver's type codes, as SQLAlchemy asks)
        compiled.results = tuple(
            type_._cached_result_processor(dialect, column[1])
            for type_, column in zip(compiled.types, cursor.description, strict=True))
    make, processors = compiled.row._make, compiled.results
    if any(processors):
        return [make(value if process is None else process(value)
                     for process, value in zip(processors, raw, strict=True))
                for raw in rows]
    return [make(raw) for raw in rows]


def run_many(statement: ClauseElement, params: list[dict]) -> int:
    """Run ``statement`` (an INSERT or UPDATE) once per item of ``params`` with the driver's
    ``executemany``, as :func:`run` runs it once; returns the rows changed (rows it would
    return, such as the id PostgreSQL returns of an INSERT, are not read). Through
    ``Session.execute`` a session's tasks and counts cost more than the rest of its writes.
    """
    if not params:
        return 0
    if not current_app.config["PREPARED_STATEMENTS"]:
        return db.session.execute(statement, params).rowcount
    connection, compiled = _connection_and_compiled(statement)
    arguments = [_arguments(compiled, item) for item in params]
    cursor = connection.connection.dbapi_connection.cursor()
    try:
        _execute(connection, cursor, compiled.sql, arguments, many=True, fetch=False)
        return cursor.rowcount
    finally:
        cursor.close()


def _connection_and_compiled(statement: ClauseElement):
    session = db.session()
    session._autoflush()  # (as Session.execute: pending ORM changes are written first)
    connection = session.connection()
    return connection, _compile(statement, connection.dialect)


def _arguments(compiled: _Compiled, params: dict | None):
    """The values of one execution as the driver takes them: processed as SQLAlchemy
    processes them, in order for a positional driver."""
    values = {**compiled.constants, **(params or {})}
    for name, process in compiled.processors.items():
        if name in values:
            values[name] = process(values[name])
    return (values if compiled.positional is None
            else tuple(values[name] for name in compiled.positional))


def driver_sql(connection, sql: str) -> None:
    """Run ``sql`` (no parameters, no rows: a BEGIN) on the driver's cursor of
    ``connection`` (SQLAlchemy's), as :func:`run` runs a statement: listeners told, errors
    SQLAlchemy's. ``Connection.exec_driver_sql`` built an execution context for it: 20% of
    the first statement of a request."""
    cursor = connection.connection.dbapi_connection.cursor()
    try:
        _execute(connection, cursor, sql, (), many=False, fetch=False)
    finally:
        cursor.close()


def _execute(connection, cursor, sql: str, arguments, *, many: bool, fetch: bool) -> list:
    """Execute on ``cursor`` (of ``connection``), the engine's listeners told of the
    statement first; the rows it returns, as the driver gives them. The driver's errors
    are raised as SQLAlchemy's."""
    for listener in connection.dispatch.before_cursor_execute:
        listener(connection, cursor, sql, arguments, None, many)
    try:
        if many:
            cursor.executemany(sql, arguments)
            return []
        cursor.execute(sql, arguments)
        return cursor.fetchall() if fetch else []
    except connection.dialect.loaded_dbapi.Error as error:
        # as SQLAlchemy does: a lost connection is not handed out by the pool again
        dialect = connection.dialect
        dbapi_connection = connection.connection.dbapi_connection
        lost = dialect.is_disconnect(error, dbapi_connection, cursor)
        if lost:
            connection.invalidate(error)
        raise exc.DBAPIError.instance(sql, arguments, error,
                                      dialect.loaded_dbapi.Error,
                                      connection_invalidated=lost,
                                      dialect=dialect) from error
