"""`tf.test`: TestCase helpers fail when they should, benchmarks report, local clusters start."""

import json
import unittest

import numpy as np
import pytest

import nbdist as tf


def _run_case(cls):
    result = unittest.TestResult()
    unittest.defaultTestLoader.loadTestsFromTestCase(cls).run(result)
    return result


def test_assertions_report_failures_as_test_failures():
    class Case(tf.test.TestCase):
        def testShape(self):
            self.assertAllEqual([1, 2], [[1, 2]])

        def testClose(self):
            self.assertAllClose({"a": [1.0, 2.0]}, {"a": [1.0, 2.5]})

        def testStructure(self):
            self.assertAllClose({"a": 1.0}, [1.0])

    result = _run_case(Case)
    assert result.testsRun == 4 and len(result.skipped) == 1  # test_session is "Not a test."
    messages = {t.id().rsplit(".", 1)[1]: m for t, m in result.failures}
    assert "Shape mismatch: expected (2,), got (1, 2)" in messages["testShape"]
    assert "Not close at ['a']" in messages["testClose"]
    assert "Mismatched structure" in messages["testStructure"]


def test_each_test_gets_a_fresh_graph_and_seeds():
    seen = []

    class Case(tf.test.TestCase):
        def testA(self):
            tf.constant(1.0)
            seen.append((len(tf.get_default_graph().get_operations()), np.random.rand()))

        testB = testA

    assert _run_case(Case).wasSuccessful()
    assert seen[0] == seen[1] and seen[0][0] == 1


def test_the_cached_session_is_closed_after_the_test():
    sessions = []

    class Case(tf.test.TestCase):
        def testA(self):
            with self.cached_session() as sess:
                sessions.append(sess)

    assert _run_case(Case).wasSuccessful()
    with pytest.raises(RuntimeError, match="closed Session"):
        sessions[0].run(tf.constant(1.0))


def test_report_benchmark_writes_one_json_entry_per_name(tmp_path, monkeypatch):
    monkeypatch.setenv("TEST_REPORT_FILE_PREFIX", str(tmp_path / "bm_"))

    class Bench(tf.test.Benchmark):
        def benchmarkThing(self):
            self.report_benchmark(iters=5, wall_time=0.25, extras={"mb": 3.0})

    Bench().benchmarkThing()
    entry = json.loads((tmp_path / "bm_Bench.benchmarkThing").read_text())
    assert entry["name"] == "Bench.benchmarkThing"
    assert (entry["iters"], entry["wall_time"], entry["extras"]) == (5, 0.25, {"mb": 3.0})


def test_main_with_benchmarks_runs_only_matching_benchmarks():
    from nbdist.platform import benchmark

    ran = []

    class Picked(tf.test.Benchmark):
        def benchmarkYes(self):
            ran.append("yes")

        def benchmarkNo(self):
            ran.append("no")

    argv = ["prog", "--benchmarks=Picked.benchmarkYes"]
    assert benchmark.benchmark_filter(argv) == "Picked.benchmarkYes" and argv == ["prog"]
    tf.test.main(["prog", "--benchmarks=Picked.benchmarkYes"])
    assert ran == ["yes"]


def test_create_local_cluster_starts_in_process_servers():
    workers, ps = tf.test.create_local_cluster(num_workers=1, num_ps=1)
    try:
        assert [s.task_device for s in workers + ps] == [
            "/job:worker/replica:0/task:0",
            "/job:ps/replica:0/task:0",
        ]
        with tf.Graph().as_default():
            with tf.device("/job:ps/task:0"):
                x = tf.constant(2.0) * 5.0
            with tf.Session(workers[0].target) as sess:
                assert sess.run(x) == 10.0
    finally:
        for s in workers + ps:
            s.stop()
    with pytest.raises(ValueError, match="must be >= 0"):
        tf.test.create_local_cluster(-1, 0)


def test_unknown_tf_test_names_say_so():
    with pytest.raises(AttributeError, match=r"tf\.test\.no_such_helper is not supported"):
        tf.test.no_such_helper  # noqa: B018
