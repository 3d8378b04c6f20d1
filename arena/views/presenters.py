"""What a voter may see of a task: the question, the caption for alignment, two opaque URLs.

Shared by the HTML pages and the JSON API so neither can leak more than the other.
"""

from __future__ import annotations

from ..config import QUESTIONS
from ..models import Task
from .images import image_url


def task_view(task: Task, external: bool = False) -> dict:
    criterion = task.session.criterion
    prompt = task.comparison.prompt
    return {
        "task_id": task.id,
        "position": task.position + 1,
        "total": len(task.session.tasks),
        "criterion": criterion,
        "question": QUESTIONS[criterion],
        "prompt": prompt.text if criterion == "alignment" and prompt is not None else None,
        "left": {"url": image_url(task.left_image.sha256, "phone", external)},
        "right": {"url": image_url(task.right_image.sha256, "phone", external)},
    }
