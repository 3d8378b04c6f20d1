import re

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
