import io
import json
import re

import numpy as np
import pandas as pd
import pytest

from arena.ranking import bradley_terry
from tests.datasets import chess_games, load_chess


@pytest.fixture
def chess_csv(tmp_path):
    """The real chess record as an external votes file (left, right, winner)."""
    games = chess_games()
    path = tmp_path / "chess.csv"
    outcome = {"1-0": "left", "0-1": "right", "1/2-1/2": "tie"}
    lines = ["left,right,winner,voter"] + [f"{w},{b},{outcome[r]},pgn" for w, b, r in games]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_rank_external_votes_json_matches_the_core(runner, chess_csv):
    result = runner.invoke(args=["rank", "--votes", str(chess_csv), "--format", "json",
                                 "--bootstrap", "100", "--seed", "3"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert {"model", "rank", "score", "rating", "ci_low", "ci_high", "votes"} <= set(rows[0])
    assert [r["rank"] for r in rows] == list(range(1, len(rows) + 1))
    assert sum(r["score"] for r in rows) == pytest.approx(100)
    wins, names = load_chess()
    fit = bradley_terry(wins)
    best = names[int(np.argmax(fit.scores))]
    assert rows[0]["model"] == best
    assert rows[0]["score"] == pytest.approx(fit.scores.max())
    assert all(r["ci_low"] <= r["rating"] <= r["ci_high"] for r in rows)
    assert sum(r["votes"] for r in rows) == 2 * 7999


def test_rank_external_votes_csv_table_and_parquet(runner, chess_csv, tmp_path):
    csv_out = runner.invoke(args=["rank", "--votes", str(chess_csv), "--format", "csv",
                                  "--bootstrap", "0"])
    frame = pd.read_csv(io.StringIO(csv_out.stdout))
    assert list(frame.columns[:3]) == ["rank", "model", "score"] and len(frame) == 17
    table = runner.invoke(args=["rank", "--votes", str(chess_csv), "--bootstrap", "50"])
    assert "BT ranking — 7,999 votes, 50 bootstrap rounds" in table.stdout
    target = tmp_path / "r.parquet"
    result = runner.invoke(args=["rank", "--votes", str(chess_csv), "--format", "parquet",
                                 "-o", str(target), "--bootstrap", "0"])
    assert result.exit_code == 0, result.output
    assert len(pd.read_parquet(target)) == 17
    missing = runner.invoke(args=["rank", "--votes", str(chess_csv), "--format", "parquet"])
    assert missing.exit_code != 0 and "--output" in missing.output


@pytest.mark.parametrize("content,message", [
    ("left,right\nA,B\n", "line 1: missing column(s) winner"),
    ("left,right,winner\nA,B,left\nA,B,draw\n", "line 3: winner must be left, right or tie"),
    ("left,right,winner\nA,,left\n", "line 2: 'left' and 'right' must name models"),
    ("left,right,winner\n", "no votes found"),
])
def test_bad_vote_files_name_the_line(runner, tmp_path, content, message):
    path = tmp_path / "votes.csv"
    path.write_text(content)
    result = runner.invoke(args=["rank", "--votes", str(path)])
    assert result.exit_code != 0
    assert message in result.output


def test_jsonl_votes(runner, tmp_path):
    path = tmp_path / "votes.jsonl"
    path.write_text('{"left": "x", "right": "y", "winner": "left"}\n'
                    '{"left": "y", "right": "x", "winner": "left"}\n'
                    '{"left": "x", "right": "y", "winner": "tie"}\n')
    rows = json.loads(runner.invoke(args=["rank", "--votes", str(path), "--format", "json",
                                          "--bootstrap", "0"]).stdout)
    assert [r["score"] for r in rows] == pytest.approx([50, 50])


def test_rank_the_database(runner, app):
    from tests.factories import time_passes

    with app.app_context():
        from tests.factories import make_campaign, vote_as

        make_campaign()
        app.config["VALIDATION_RATE"] = 0.0
        vote_as({"country": "DE"}, ["model-1", "model-0", "model-2"])
    result = runner.invoke(args=["rank", "--criterion", "preference", "--format", "json",
                                 "--bootstrap", "100", "--live"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert rows[0]["model"] == "model-1" and rows[0]["online_elo"] > 1000
    assert "warning: live: every vote to the second" in result.stderr
    # by default, the votes counted in public figures as of the last screen: none yet
    screened = runner.invoke(args=["rank", "--criterion", "preference", "--format", "json"])
    assert "the votes counted in public figures at the last screen" in screened.stderr
    assert all(r["votes"] == 0 for r in json.loads(screened.stdout))
    with app.app_context():
        time_passes()
    rows = json.loads(runner.invoke(args=["rank", "--criterion", "preference", "--format",
                                          "json"]).stdout)
    assert rows[0]["model"] == "model-1" and rows[0]["online_elo"] > 1000
    sliced = runner.invoke(args=["rank", "--criterion", "preference", "--continent", "AS",
                                 "--format", "json"])
    assert all(r["votes"] == 0 for r in json.loads(sliced.stdout))
    bad = runner.invoke(args=["rank", "--criterion", "preference", "--continent", "XX"])
    assert bad.exit_code != 0 and "continent must be one of" in bad.output
    assert runner.invoke(args=["rank"]).exit_code != 0



def test_instant_intervals_option(runner, chess_csv):
    rows = json.loads(runner.invoke(args=["rank", "--votes", str(chess_csv), "--format", "json",
                                          "--intervals", "instant"]).stdout)
    assert all(r["ci_low"] < r["rating"] < r["ci_high"] for r in rows)
    assert all(r["score_low"] < r["score"] < r["score_high"] for r in rows)


def test_davidson_ties_option(runner, chess_csv):
    half = json.loads(runner.invoke(args=["rank", "--votes", str(chess_csv), "--format", "json",
                                          "--bootstrap", "0"]).stdout)
    result = runner.invoke(args=["rank", "--votes", str(chess_csv), "--format", "json",
                                 "--ties", "davidson", "--bootstrap", "200"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert "Davidson tie model: nu =" in result.stderr
    assert all(r["ci_low"] <= r["rating"] <= r["ci_high"] for r in rows)
    assert all(r["rank_best"] <= r["rank"] <= r["rank_worst"] for r in rows)
    spread = max(r["rating"] for r in rows) - min(r["rating"] for r in rows)
    half_spread = max(r["rating"] for r in half) - min(r["rating"] for r in half)
    assert spread > half_spread  # half wins compress the scale
    assert sum(r["votes"] for r in rows) == 2 * 7999


def test_elo_of_a_votes_file_with_intervals(runner, chess_csv):
    """`arena rank --votes FILE --method elo`: the online update in the file's order
    (online_elo) and bootstrap intervals over random orders around their median."""
    from arena.analysis.vote_files import read_votes
    from arena.ranking.elo import EloParams, elo

    result = runner.invoke(args=["rank", "--votes", str(chess_csv), "--method", "elo",
                                 "--format", "json", "--bootstrap", "200"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    votes = read_votes(chess_csv)
    ordered = elo(votes.winners, votes.losers, len(votes.names), ties=votes.ties,
                  params=EloParams(k=runner.app.config["ELO_K"]))
    by_name = dict(zip(votes.names, ordered, strict=True))
    assert all(r["online_elo"] == pytest.approx(by_name[r["model"]]) for r in rows)
    assert all(r["ci_low"] <= r["rating"] <= r["ci_high"] for r in rows)
    assert [r["rank"] for r in rows] == list(range(1, len(rows) + 1))


def test_a_file_with_voters_and_prompts_is_clustered_both_ways_by_default(runner, tmp_path):
    rng = np.random.default_rng(0)
    path = tmp_path / "votes.csv"
    rows = ["left,right,winner,voter,prompt"]
    for _ in range(3000):  # 3 models; prompt p suits model p % 3 best
        left, right = rng.choice(["a", "b", "c"], 2, replace=False)
        prompt = int(rng.integers(0, 40))
        suited = "abc"[prompt % 3]
        p_left = 0.8 if left == suited else 0.2 if right == suited else 0.5
        winner = "left" if rng.random() < p_left else "right"
        rows.append(f"{left},{right},{winner},v{rng.integers(0, 300)},p{prompt}")
    path.write_text("\n".join(rows) + "\n")

    def ranked(*extra):
        done = runner.invoke(args=["rank", "--votes", str(path), *extra])
        assert done.exit_code == 0, done.output
        return done.stdout

    both = ranked()
    assert "instant (sandwich) intervals, resampling 300 voters and 40 prompts" in both
    voters = ranked("--cluster", "voter")
    assert "resampling 300 voters" in voters and "prompts" not in voters

    def width(table):
        return [float(high) - float(low) for low, high in re.findall(
            r"\s(\d+)\u2013(\d+)\s+\d", table)]

    # prompts that suit models differently: the prompts' spread widens every interval
    assert len(width(both)) == len(width(voters)) == 3, both
    assert min(np.divide(width(both), width(voters))) > 1.2, (both, voters)
    boot = ranked("--bootstrap", "100")
    assert "100 bootstrap rounds, resampling 300 voters and 40 prompts" in boot
