import json

import numpy as np
import pytest


def write_trials(path, time=False, seed=0):
    """Two models, 6 evaluators each; model 'Good' fools evaluators more often."""
    rng = np.random.default_rng(seed)
    lines = ["evaluator,model,image,is_real,judged_real,exposure_ms,block"]
    for m, fool in (("Good", 0.45), ("Poor", 0.15)):
        for e in range(6):
            for k in range(40):
                real = k % 2 == 0
                wrong = rng.random() < (0.2 if real else fool)
                judged = real != wrong
                exposure = (450 if m == "Good" else 250) + 10 * rng.integers(-2, 3)
                lines.append(f"{m}-{e},{'' if real else m},img{k},{int(real)},{int(judged)},"
                             f"{exposure},{1 + k // 20}")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_score_infinity_table_and_json(runner, tmp_path):
    trials = write_trials(tmp_path / "t.csv")
    table = runner.invoke(args=["hype", "score", "--trials", str(trials), "--rounds", "1000"])
    assert table.exit_code == 0, table.output
    assert "HYPE-∞ (deception rate)" in table.output and "Welch t-test" in table.output
    body = json.loads(runner.invoke(args=["hype", "score", "--trials", str(trials),
                                          "--format", "json", "--rounds", "1000"]).output)
    models = body["models"]
    assert [m["model"] for m in models] == ["Good", "Poor"]
    assert models[0]["ci_low"] <= models[0]["score"] <= models[0]["ci_high"]
    assert body["separability"]["ttest_p"] < 0.01


def test_score_time(runner, tmp_path):
    trials = write_trials(tmp_path / "t.csv", time=True)
    result = runner.invoke(args=["hype", "score", "--trials", str(trials), "--mode", "time",
                                 "--format", "csv", "--rounds", "500"])
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    assert lines[0].startswith("rank,model,score") and lines[0].endswith("paper_score")
    assert lines[1].startswith("1,Good,") and lines[1].split(",")[-1].startswith("4")


@pytest.mark.parametrize("content,message", [
    ("evaluator,model\n", "missing column(s) is_real, judged_real"),
    ("evaluator,model,is_real,judged_real\ne1,,0,1\n", "line 2: a fake image needs its model"),
    ("evaluator,model,is_real,judged_real\ne1,X,maybe,1\n", "line 2: is_real must be"),
    ("evaluator,model,is_real,judged_real\ne1,X,0,1\ne1,Y,0,1\n", "fakes of 2 models"),
])
def test_bad_trial_files(runner, tmp_path, content, message):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    result = runner.invoke(args=["hype", "score", "--trials", str(path)])
    assert result.exit_code == 1 and message in result.output
