"""The global step: creation, lookup, checks and reading it from a session."""

import numpy as np
import pytest

import nbdist as tf

pytestmark = pytest.mark.usefixtures("graph")


def test_get_or_create_global_step_makes_an_int64_scalar_named_global_step():
    step = tf.train.get_or_create_global_step()
    assert (step.name, step.dtype, step.shape.as_list()) == ("global_step:0", tf.int64, [])


def test_global_step_is_not_trainable_and_in_its_collections():
    step = tf.train.get_or_create_global_step()
    assert not step.trainable
    assert tf.get_collection(tf.GraphKeys.GLOBAL_STEP) == [step]
    assert step in tf.global_variables()
    assert step not in tf.trainable_variables()


def test_get_or_create_global_step_returns_the_existing_one():
    assert tf.train.get_or_create_global_step() is tf.train.get_or_create_global_step()


def test_get_global_step_is_none_until_created():
    assert tf.train.get_global_step() is None
    step = tf.train.create_global_step()
    assert tf.train.get_global_step() is step


def test_create_global_step_twice_is_an_error():
    tf.train.create_global_step()
    with pytest.raises(ValueError, match='"global_step" already exists'):
        tf.train.create_global_step()


def test_global_step_is_created_at_the_root_name_scope():
    with tf.name_scope("model"):
        step = tf.train.get_or_create_global_step()
    assert step.op.name == "global_step"


def test_global_step_is_found_by_name_outside_the_collection():
    step = tf.Variable(np.int64(0), name="global_step", trainable=False)
    assert tf.train.get_global_step() is step._ref()


def test_global_step_of_another_graph():
    other = tf.Graph()
    step = tf.train.get_or_create_global_step(other)
    assert step.graph is other
    assert tf.train.get_global_step() is None
    assert tf.train.get_global_step(other) is step


def test_more_than_one_global_step_is_an_error():
    tf.train.create_global_step()
    tf.add_to_collection(tf.GraphKeys.GLOBAL_STEP, tf.Variable(np.int64(0), name="other_step"))
    with pytest.raises(ValueError, match="the GLOBAL_STEP collection holds 2 items"):
        tf.train.get_global_step()


def test_float_global_step_is_rejected():
    tf.add_to_collection(tf.GraphKeys.GLOBAL_STEP, tf.Variable(0.0, name="global_step"))
    with pytest.raises(TypeError, match=r'Existing "global_step" does not have integer type: tf\.float32'):
        tf.train.get_global_step()


def test_non_scalar_global_step_is_rejected():
    with pytest.raises(TypeError, match=r'Existing "global_step" is not scalar: \(2,\)'):
        tf.train.assert_global_step(tf.Variable(np.zeros(2, np.int64)))


def test_global_step_must_be_a_variable_or_tensor():
    with pytest.raises(TypeError, match='Existing "global_step" must be a Variable or Tensor: 3'):
        tf.train.assert_global_step(3)


def test_global_step_reads_the_value_as_an_int():
    step = tf.train.get_or_create_global_step()
    increment = tf.assign_add(step, 1)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert tf.train.global_step(sess, step) == 0
        sess.run(increment)
        sess.run(increment)
        value = tf.train.global_step(sess, step)
    assert (value, type(value)) == (2, int)


def test_unsupported_train_names_say_so():
    with pytest.raises(AttributeError, match=r"tf\.train\.sdca_optimizer is not supported by nbdist yet"):
        _ = tf.train.sdca_optimizer
