import re

from sqlalchemy import event

CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')
TASK_ACTION = re.compile(r'action="/t/(\d+)"')


def csrf_token(html: str) -> str:
    match = CSRF.search(html)
    assert match, "page has no CSRF token"
    return match.group(1)


def task_id(html: str) -> int | None:
    match = TASK_ACTION.search(html)
    return int(match.group(1)) if match else None


def start_session(client, **answers):
    """Land on the home page, post the start form, follow to the session page."""
    token = csrf_token(client.get("/").get_data(as_text=True))
    data = {"csrf_token": token, **answers}
    if answers:
        data["with_demographics"] = "1"
    response = client.post("/start", data=data)
    return response


def api_session(client, body=None, token=None):
    """POST /api/v1/sessions as a phone app would (a new voter without a token)."""
    return client.post("/api/v1/sessions", json=body, headers=bearer(token) if token else {})


def bearer(token) -> dict:
    return {"Authorization": f"Bearer {token}"}


READ_ACTION = re.compile(r'formaction="(/t/\d+/read)"')


def confirm_read_if_asked(client, html: str, **headers) -> str:
    """Press "I have read the caption" when the card asks for it (no JavaScript: the form
    posts to the read endpoint and the next page has the images enabled); returns the page
    to vote on. Tests using it set REVEAL_WORD_MS to 0 unless they test the timing."""
    match = READ_ACTION.search(html)
    if not match:
        return html
    response = client.post(match.group(1), data={"csrf_token": csrf_token(html)},
                           headers=headers)
    if response.status_code == 303:
        return client.get(response.headers["Location"]).get_data(as_text=True)
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.get_data(as_text=True)


ROUND_TRIP_KINDS = {"before_cursor_execute": "statements", "begin": "begin",
                    "commit": "commit", "rollback": "rollback"}


class RoundTrips:
    """Counts what each measured request sends the database: statements, BEGINs, COMMITs
    and ROLLBACKs (SQLAlchemy's engine events)."""

    def __init__(self, engine):
        self.engine, self.seen = engine, {}
        self.counters = {event_name: self._counter(kind)
                         for event_name, kind in ROUND_TRIP_KINDS.items()}

    def _counter(self, kind):
        def count(*_args, **_kwargs):
            self.seen[kind] = self.seen.get(kind, 0) + 1
        return count

    def __enter__(self):
        for name, fn in self.counters.items():
            event.listen(self.engine, name, fn)
        return self

    def __exit__(self, *exc):
        for name, fn in self.counters.items():
            event.remove(self.engine, name, fn)

    def measure(self, call) -> dict:
        self.seen = dict.fromkeys(ROUND_TRIP_KINDS.values(), 0)
        call()
        return dict(self.seen)


def presented_in(served: bytes, stored) -> bool:
    """Whether ``served`` is one of the ``stored`` presentations, grown with filler inside
    its VP8 chunk to its task's length (arena.catalog.presentation.pad_webp)."""
    return any(len(served) >= len(data) and served[:4] == b"RIFF"
               and served[20:len(data)] == data[20:] for data in stored)
