"""`tf.data.Options` / `ThreadingOptions`, `Dataset.with_options` / `options`,
`Dataset.cardinality` and the constants `tf.data.AUTOTUNE`, `INFINITE_CARDINALITY`,
`UNKNOWN_CARDINALITY`, each program run under nbdist and real TF."""

import warnings

import numpy as np
import pytest

import nbdist as tf


def test_constants_are_tfs(tf1):
    for name in ("AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY"):
        assert getattr(tf.data, name) == getattr(tf1.data, name), name


def _cardinality(lib, build, feed=None):
    with lib.Graph().as_default():
        x = lib.placeholder(lib.float32, [None, 2], name="x")
        count = build(lib, x).cardinality()
        assert count.dtype == lib.int64
        with lib.Session() as sess:
            return int(sess.run(count, {x: np.zeros((7, 2), np.float32)}))


PIPELINES = {
    "range": lambda t, x: t.data.Dataset.range(3, 20, 4),
    "range_empty": lambda t, x: t.data.Dataset.range(5, 2),
    "slices_fed": lambda t, x: t.data.Dataset.from_tensor_slices(x),
    "tensors": lambda t, x: t.data.Dataset.from_tensors(x),
    "batch": lambda t, x: t.data.Dataset.range(10).batch(3),
    "batch_drop": lambda t, x: t.data.Dataset.range(10).batch(3, drop_remainder=True),
    "padded_batch": lambda t, x: t.data.Dataset.range(10).padded_batch(4, []),
    "repeat": lambda t, x: t.data.Dataset.range(4).repeat(3),
    "repeat_forever": lambda t, x: t.data.Dataset.range(4).repeat(),
    "repeat_empty": lambda t, x: t.data.Dataset.range(0).repeat(),
    "repeat_take": lambda t, x: t.data.Dataset.range(4).repeat().take(9),
    "take_more": lambda t, x: t.data.Dataset.range(4).take(10),
    "take_all": lambda t, x: t.data.Dataset.range(4).take(-1),
    "skip": lambda t, x: t.data.Dataset.range(10).skip(4),
    "skip_more": lambda t, x: t.data.Dataset.range(3).skip(5),
    "skip_forever": lambda t, x: t.data.Dataset.range(3).repeat().skip(5),
    "shard": lambda t, x: t.data.Dataset.range(10).shard(3, 1),
    "shard_last": lambda t, x: t.data.Dataset.range(10).shard(3, 2),
    "zip": lambda t, x: t.data.Dataset.zip((t.data.Dataset.range(5), t.data.Dataset.from_tensor_slices(x))),
    "zip_forever": lambda t, x: t.data.Dataset.zip(
        (t.data.Dataset.range(5).repeat(), t.data.Dataset.range(2))
    ),
    "concatenate": lambda t, x: t.data.Dataset.range(5).concatenate(t.data.Dataset.range(2)),
    "map_shuffle_cache": lambda t, x: t.data.Dataset.range(6).map(t.square).shuffle(3, seed=1).cache(),
    "map_autotune": lambda t, x: t.data.Dataset.range(6).map(
        lambda v: v + 1, num_parallel_calls=t.data.AUTOTUNE
    ),
    "prefetch_autotune": lambda t, x: t.data.Dataset.range(6).prefetch(t.data.AUTOTUNE),
    "filter": lambda t, x: t.data.Dataset.range(6).filter(lambda v: v > 2),
    "flat_map": lambda t, x: t.data.Dataset.range(3).flat_map(t.data.Dataset.range),
    "filter_repeat": lambda t, x: t.data.Dataset.range(6).filter(lambda v: v > 2).repeat(),
}


@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_cardinality_matches_tensorflow(tf1, name):
    assert _cardinality(tf, PIPELINES[name]) == _cardinality(tf1, PIPELINES[name])


def test_cardinality_constants_name_the_special_counts():
    assert _cardinality(tf, PIPELINES["repeat_forever"]) == tf.data.INFINITE_CARDINALITY
    assert _cardinality(tf, PIPELINES["filter"]) == tf.data.UNKNOWN_CARDINALITY


def _options_program(lib):
    options = lib.data.Options()
    options.deterministic = False
    options.threading.private_threadpool_size = 4
    options.experimental_optimization.map_parallelization = True
    more = lib.data.Options()
    more.threading.max_intra_op_parallelism = 1
    more.experimental_slack = True
    with lib.Graph().as_default():
        dataset = lib.data.Dataset.range(5).with_options(options).map(lambda v: v * 3).with_options(more)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # TF: "the options value is in general no longer known..."
            got = dataset.options()
        values = []
        next_element = lib.data.make_one_shot_iterator(dataset).get_next()
        with lib.Session() as sess:
            values = [sess.run(next_element) for _ in range(5)]
    return got, values


def test_options_travel_down_the_pipeline_and_merge_as_tfs(tf1):
    for lib in (tf, tf1):
        got, values = _options_program(lib)
        assert values == [0, 3, 6, 9, 12]
        assert got.deterministic is False and got.experimental_slack is True
        assert got.threading.private_threadpool_size == 4 and got.threading.max_intra_op_parallelism == 1
        assert got.experimental_optimization.map_parallelization is True
        assert got.dataset_name is None and lib.data.ThreadingOptions().private_threadpool_size is None
    assert tf.data.Options() == tf.data.Options()


def test_bad_options_are_refused_in_tfs_words(tf1):
    for lib in (tf, tf1):
        options = lib.data.Options()
        with pytest.raises(AttributeError, match=r"Cannot set the property foo on Options\."):
            options.foo = 1
        with pytest.raises(TypeError, match=r'Property "deterministic" must be of type'):
            options.deterministic = 3
        threading = lib.data.ThreadingOptions()
        with pytest.raises(AttributeError, match=r"Cannot set the property pool on ThreadingOptions\."):
            threading.pool = 2
