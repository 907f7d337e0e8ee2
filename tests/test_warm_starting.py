"""`tf.train.init_from_checkpoint`, `tf.train.warm_start` and `tf.train.VocabInfo`: the same
program under nbdist and real TF - save a checkpoint of a first model, build a second model,
start (some of) its variables from the checkpoint, run the initializer - gives the same values.
Each library reads its own checkpoint format."""

import numpy as np
import pytest

import nbdist as tf

RNG = np.random.default_rng(5)
W = RNG.standard_normal((3, 2))
B = RNG.standard_normal(2)
E = RNG.standard_normal((4, 3))  # rows of the old vocabulary: a, b, c, d


def _save_first_model(lib, path):
    with lib.Graph().as_default():
        with lib.variable_scope("old"):
            lib.get_variable("w", initializer=W, dtype=lib.float64)
            lib.get_variable("b", initializer=B, dtype=lib.float64)
        lib.get_variable("emb", initializer=E.astype(np.float32))
        saver = lib.train.Saver()
        with lib.Session() as sess:
            sess.run(lib.global_variables_initializer())
            return saver.save(sess, str(path / "model"))


def _second_model(lib, start, ckpt):
    with lib.Graph().as_default():
        with lib.variable_scope("new"):
            w = lib.get_variable("w", [3, 2], lib.float64, lib.zeros_initializer())
            b = lib.get_variable("b", [2], lib.float64, lib.zeros_initializer())
        other = lib.get_variable("other", [2], lib.float64, lib.ones_initializer())
        emb = lib.get_variable("emb", [5, 3], lib.float32, lib.constant_initializer(-1.0))
        start(lib, ckpt)
        with lib.Session() as sess:
            sess.run(lib.global_variables_initializer())
            return sess.run([w, b, other, emb])


STARTS = {
    "scope": lambda t, ckpt: t.train.init_from_checkpoint(ckpt, {"old/": "new/"}),
    "names": lambda t, ckpt: t.train.init_from_checkpoint(ckpt, {"old/w": "new/w"}),
    "variable": lambda t, ckpt: t.train.init_from_checkpoint(ckpt, {"old/b": _var(t, "new/b")}),
    "warm_start_regex": lambda t, ckpt: t.train.warm_start(
        ckpt, "new/.*", var_name_to_prev_var_name={"new/w": "old/w", "new/b": "old/b"}
    ),
    "warm_start_list": lambda t, ckpt: t.train.warm_start(
        ckpt, ["new/b"], var_name_to_prev_var_name={"new/b": "old/b"}
    ),
}


def _var(lib, name):
    return next(v for v in lib.global_variables() if v.op.name == name)


@pytest.mark.parametrize("name", sorted(STARTS))
def test_starting_from_a_checkpoint_matches_tensorflow(tf1, tmp_path, name):
    results = []
    for lib in (tf, tf1):
        (tmp_path / lib.__name__).mkdir()
        ckpt = _save_first_model(lib, tmp_path / lib.__name__)
        results.append(_second_model(lib, STARTS[name], ckpt))
    for ours, theirs in zip(*results):
        np.testing.assert_array_equal(ours, theirs)


def test_vocab_info_remaps_rows_as_tf(tf1, tmp_path):
    (tmp_path / "old.txt").write_text("a\nb\nc\nd\n")
    (tmp_path / "new.txt").write_text("c\nz\na\nd\n")
    results = []
    for lib in (tf, tf1):
        (tmp_path / lib.__name__).mkdir()
        ckpt = _save_first_model(lib, tmp_path / lib.__name__)
        info = lib.train.VocabInfo(
            new_vocab=str(tmp_path / "new.txt"),
            new_vocab_size=4,
            num_oov_buckets=1,
            old_vocab=str(tmp_path / "old.txt"),
        )
        assert info.axis == 0 and info.old_vocab_size == -1
        results.append(
            _second_model(lib, lambda t, c, i=info: t.train.warm_start(c, ["emb"], {"emb": i}), ckpt)[3]
        )
    np.testing.assert_allclose(results[0], results[1])
    np.testing.assert_array_equal(
        results[0], np.concatenate([E[[2]], [[0] * 3], E[[0, 3]], [[0] * 3]]).astype(np.float32)
    )
    (tmp_path / "backup").mkdir()
    ckpt = _save_first_model(tf, tmp_path / "backup")
    info = tf.train.VocabInfo(
        str(tmp_path / "new.txt"), 4, 1, str(tmp_path / "old.txt"), 3, tf.constant_initializer(7.0)
    )
    emb = _second_model(tf, lambda t, c: t.train.warm_start(c, ["emb"], {"emb": info}), ckpt)[3]
    np.testing.assert_array_equal(
        emb, np.concatenate([E[[2]], [[7] * 3], E[[0]], [[7] * 3], [[7] * 3]]).astype(np.float32)
    )


def test_mistakes_are_refused_in_tfs_words(tf1, tmp_path):
    for lib in (tf, tf1):
        (tmp_path / lib.__name__).mkdir()
        ckpt = _save_first_model(lib, tmp_path / lib.__name__)
        for mapping, words in (
            ({"missing": "new/w"}, r"Tensor missing is not found"),
            ({"old/b": "new/w"}, r"Shape of variable new/w:0 .* doesn't match with shape of tensor old/b"),
            ({"old/w": "new/"}, r"should map to scope only"),
        ):
            with pytest.raises(ValueError, match=words):
                _second_model(lib, lambda t, c, m=mapping: t.train.init_from_checkpoint(c, m), ckpt)
        with pytest.raises(ValueError, match=r"var_name_to_prev_var_name that were not used: \{'nowhere'\}"):
            _second_model(
                lib,
                lambda t, c: t.train.warm_start(c, "new/b", None, {"new/b": "old/b", "nowhere": "x"}),
                ckpt,
            )
        with pytest.raises(ValueError, match=r"only supported values for the axis argument are 0 and 1"):
            lib.train.VocabInfo("n", 1, 0, "o", axis=2)
