"""Issue 29's tutorial-style corpus (tests/tutorial_corpus/, plus tests/tf_style/cnn_layers_test.py)
runs under nbdist and matches real TensorFlow's recorded results.

Each program runs under nbdist here; real TF's result comes from tests/tutorial_corpus/
tf_outputs.json (written by record_tf.py) when the record's program sha256 is the file's and
its TF version the installed one. Otherwise, with tensorflow installed, TF runs the program
here (comparing only: the JSON is not rewritten); without it, the test fails and asks for
record_tf.py. So CI normally runs nbdist only.

Deterministic programs (one process, or a fixed order of steps) match TF's numbers to rtol 1e-4
(atol 1e-6 for values near zero) and everything else they report exactly. The others (between-
graph and synchronous training across one or two ps tasks and two workers) each reach the
target the program states, and nbdist's and TF's final metrics differ by less than 20%.
"""

import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent / "tutorial_corpus"))
import corpus  # tests/tutorial_corpus/corpus.py, importable once its folder is on the path

RTOL, ATOL = 1e-4, 1e-6
MAX_METRIC_DIFFERENCE = 0.2


def _theirs(name, tmp_path):
    recorded = json.loads(corpus.OUTPUTS.read_text())["programs"].get(name)
    version = corpus.tf_version()
    if recorded and recorded["sha256"] == corpus.sha256(name) and version in (None, recorded["tensorflow"]):
        return recorded["result"]
    if version is None:
        pytest.fail(
            f"tf_outputs.json has no real-TF result for this {name}: run tests/tutorial_corpus/record_tf.py"
        )
    return corpus.run(name, "tf", tmp_path / "tf")  # (changed since recorded: compare only)


def _compare_deterministic(ours, theirs):
    assert set(ours["values"]) == set(theirs["values"])
    for key, value in theirs["values"].items():
        np.testing.assert_allclose(ours["values"][key], value, rtol=RTOL, atol=ATOL, err_msg=key)
    others = {k: v for k, v in theirs.items() if k != "values"}
    assert {k: v for k, v in ours.items() if k != "values"} == others


def _compare_to_target(name, ours, theirs):
    for key, target in theirs["target"].items():
        assert ours["values"][key] >= target, (
            f"{name}: nbdist's {key} {ours['values'][key]} < its target {target}"
        )
        assert theirs["values"][key] >= target, (
            f"{name}: TF's {key} {theirs['values'][key]} < target {target}"
        )
        a, b = ours["values"][key], theirs["values"][key]
        assert abs(a - b) < MAX_METRIC_DIFFERENCE * max(abs(a), abs(b)), f"{name}: {key} nbdist {a} vs TF {b}"
    assert ours["target"] == theirs["target"]
    assert ours["last_loss"] < 0.5 * ours["first_loss"], ours


def _cases():
    for name, spec in sorted(corpus.PROGRAMS.items()):
        marks = [pytest.mark.slow] if spec["kind"] == "cluster" else []
        yield pytest.param(name, marks=marks, id=name.removesuffix(".py"))


@pytest.mark.parametrize("name", list(_cases()))
def test_program_runs_under_nbdist_as_under_tensorflow(name, tmp_path):
    result = corpus.run(name, "nbdist", tmp_path / "nbdist")
    theirs = _theirs(name, tmp_path)
    ours = result["chief"]
    print(f"{name}: nbdist {json.dumps(ours)[:400]}\n{name}: tf {json.dumps(theirs['chief'])[:400]}")
    if corpus.PROGRAMS[name]["kind"] == "cluster":
        assert set(result["workers"]) == {0, 1}, "nbdist ends every worker cleanly"
        _compare_to_target(name, ours, theirs["chief"])
    else:
        assert ours.get("passed", True), ours.get("output")
        _compare_deterministic(ours, theirs["chief"])


def test_every_program_states_the_pattern_it_reproduces():
    for name in corpus.PROGRAMS:
        assert corpus.path(name).read_text().startswith('"""Pattern: '), name
