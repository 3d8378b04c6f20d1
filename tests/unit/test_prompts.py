import pytest
from sqlalchemy import func, select

from arena.catalog.prompts import PromptFileError, import_prompts, shipped_prompt_file
from arena.errors import Conflict
from arena.extensions import db
from arena.models import Prompt


def test_drawbench_imports_200_prompts_in_11_categories(ctx):
    prompt_set = import_prompts(shipped_prompt_file("DrawBench.csv"))
    assert prompt_set.name == "DrawBench"
    assert db.session.scalar(select(func.count()).select_from(Prompt)) == 200
    categories = db.session.scalars(select(Prompt.category).distinct()).all()
    assert len(categories) == 11
    first = db.session.scalar(select(Prompt).order_by(Prompt.position))
    assert (first.text, first.category) == ("A red colored car.", "Colors")


def test_partiprompts_tsv(ctx):
    import_prompts(shipped_prompt_file("PartiPrompts.tsv"), name="Parti")
    assert db.session.scalar(select(func.count()).select_from(Prompt)) == 1632


def test_jsonl(ctx, tmp_path):
    path = tmp_path / "mine.jsonl"
    path.write_text('{"prompt": "a cat", "category": "Animals"}\n\n{"text": "a dog"}\n')
    import_prompts(path)
    rows = db.session.execute(select(Prompt.text, Prompt.category).order_by(Prompt.position))
    assert rows.all() == [("a cat", "Animals"), ("a dog", None)]


@pytest.mark.parametrize("name,content,message", [
    ("a.csv", "Text,Category\n", "no prompts"),
    ("b.csv", "Caption,Category\nx,y\n", "line 1: missing column.s. prompt .found caption"),
    ("c.csv", "Prompt,Category\nfine,A\n,B\n", "line 3: empty prompt"),
    ("d.jsonl", '{"prompt": "ok"}\n{nope\n', "line 2: invalid JSON"),
    ("e.txt", "hello", "unknown file type"),
])
def test_bad_files_name_the_line_and_write_nothing(ctx, tmp_path, name, content, message):
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(PromptFileError, match=message):
        import_prompts(path)
    assert db.session.scalar(select(func.count()).select_from(Prompt)) == 0


def test_non_utf8_file_is_refused(ctx, tmp_path):
    path = tmp_path / "latin.csv"
    path.write_bytes("Prompt\ncaf\xe9\n".encode("latin-1"))
    with pytest.raises(PromptFileError, match="not UTF-8"):
        import_prompts(path)


def test_duplicate_set_name_is_refused(ctx):
    import_prompts(shipped_prompt_file("DrawBench.csv"))
    with pytest.raises(Conflict, match="already exists"):
        import_prompts(shipped_prompt_file("DrawBench.csv"))


def test_a_set_named_with_other_capitals_is_pointed_to_not_imported(ctx):
    from arena.catalog.prompts import prompt_set
    from arena.errors import NotFound

    with pytest.raises(NotFound, match="did you mean 'DrawBench'"):
        prompt_set("drawbench")
    with pytest.raises(NotFound, match="import it"):
        prompt_set("NoSuchSet")
    assert db.session.scalar(select(func.count()).select_from(Prompt)) == 0
