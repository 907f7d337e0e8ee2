"""`tf.random.Generator` (a random-number generator whose state is a variable), `Algorithm`,
`create_rng_state`, and the global generator (`get_global_generator` / `set_global_generator`).

As TF's in a TF 1.x graph: the state is a non-trainable int64 variable (``[counter, 0, key]``
for Philox, ``[counter, key]`` for ThreeFry) that `global_variables_initializer` initialises,
and every draw adds 1 to its counter and draws with the stateless ops, seeded by ``(key,
counter)``: each `Session.run` of a draw gives new numbers, and the same seed gives the same
sequence. The numbers are nbdist's (see ops/random_ops.py), not TF's Philox streams; the state
layout, `create_rng_state` and the bookkeeping are TF's.
"""

import enum
import weakref

import numpy as np

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import get_default_graph
from nbdist.ops import random_ops, registry, state_ops, stateless_random_ops
from nbdist.ops._shapes import int_tensor
from nbdist.ops.concat_slice_ops import stack
from nbdist.ops.constant_op import constant, convert_to_tensor

__all__ = ["Algorithm", "Generator", "create_rng_state", "get_global_generator", "set_global_generator"]


class Algorithm(enum.Enum):
    """`tf.random.Algorithm`: the counter-based generators TF knows (their state sizes differ)."""

    PHILOX = 1
    THREEFRY = 2
    AUTO_SELECT = 3


_STATE_SIZE = {Algorithm.PHILOX: 3, Algorithm.THREEFRY: 2}
_NAMES = {"philox": Algorithm.PHILOX, "threefry": Algorithm.THREEFRY, "auto_select": Algorithm.AUTO_SELECT}


def _algorithm(alg):
    if alg is None:
        return Algorithm.PHILOX
    if isinstance(alg, str):
        if alg.lower() not in _NAMES:
            raise ValueError(f"unknown random algorithm {alg!r}: give one of {sorted(_NAMES)}")
        alg = _NAMES[alg.lower()]
    alg = Algorithm(alg.value if isinstance(alg, Algorithm) else int(alg))
    return Algorithm.PHILOX if alg is Algorithm.AUTO_SELECT else alg


def _state_of(seed, size):
    """TF's ``_make_1d_state``: an int seed cut into 64-bit words, low first; padded or cut to `size`."""
    if isinstance(seed, (int, np.integer)):
        seed, words = int(seed), []
        for _ in range(size):
            words.append(seed & (2**64 - 1))
            seed >>= 64
    else:
        words = [int(w) for w in np.ravel(seed)][:size]
        words += [0] * (size - len(words))
    return np.array([w - 2**64 if w >= 2**63 else w for w in words], np.int64)


def create_rng_state(seed, alg):
    """`tf.random.create_rng_state`: the initial state of a generator of algorithm `alg` for `seed`."""
    return constant(_state_of(seed, _STATE_SIZE[_algorithm(alg)]), dtype=_dtypes.int64)


class Generator:
    """`tf.random.Generator`: draws that change at each run, from a state variable."""

    def __init__(self, copy_from=None, state=None, alg=None):
        if copy_from is not None:
            if state is not None or alg is not None:
                raise ValueError("Generator: give copy_from alone, or state and alg")
            # (its initial state: reading its variable here would need it initialised first)
            self._alg, initial = copy_from.algorithm, copy_from.state.initial_value
        else:
            self._alg = _algorithm(alg)
            if state is None:
                raise ValueError("Generator: give a state (or use Generator.from_seed)")
            initial = state if hasattr(state, "dtype") else _state_of(state, _STATE_SIZE[self._alg])
        self._splits = 0
        with get_default_graph().name_scope("Generator"):
            self._state = state_ops.Variable(initial, dtype=_dtypes.int64, trainable=False, name="StateVar")

    @classmethod
    def from_seed(cls, seed, alg=None):
        """A generator whose state comes from `seed` (`create_rng_state`)."""
        alg = _algorithm(alg)
        return cls(state=_state_of(seed, _STATE_SIZE[alg]), alg=alg)

    @classmethod
    def from_state(cls, state, alg):
        return cls(state=state, alg=alg)

    @classmethod
    def from_key_counter(cls, key, counter, alg):
        counter = [int(c) for c in np.ravel(counter)]
        return cls(state=[*counter, int(np.ravel(key)[0])], alg=alg)

    @classmethod
    def from_non_deterministic_state(cls, alg=None):
        """A generator seeded from the operating system's entropy."""
        alg = _algorithm(alg)
        words = np.random.default_rng().integers(-(2**63), 2**63 - 1, _STATE_SIZE[alg], dtype=np.int64)
        return cls(state=words, alg=alg)

    @property
    def state(self):
        """The state variable."""
        return self._state

    @property
    def algorithm(self):
        return self._alg.value

    @property
    def key(self):
        return self._state[-1]

    def _next_seed(self):
        """Adds 1 to the counter; the ``(key, counter)`` seed pair of this draw."""
        step = np.zeros(_STATE_SIZE[self._alg], np.int64)
        step[0] = 1
        new = state_ops.assign_add(self._state, constant(step))
        return stack([new[-1], new[0]])

    def _full_int(self, shape, dtype):
        dtype = _dtypes.as_dtype(dtype)
        if dtype not in (_dtypes.int32, _dtypes.int64, _dtypes.uint32, _dtypes.uint64):
            raise ValueError(f"uniform_full_int takes int32, int64, uint32 or uint64, got {dtype.name}")
        inputs = [int_tensor(shape, "shape", name="shape"), self._next_seed()]
        return registry.make_op("StatelessRandomUniformFullInt", inputs, {"dtype": dtype}).outputs[0]

    def normal(self, shape, mean=0.0, stddev=1.0, dtype=_dtypes.float32, name=None):
        return random_ops.stateless_random_normal(
            shape, self._next_seed(), mean, stddev, dtype, name or "stateful_normal"
        )

    def truncated_normal(self, shape, mean=0.0, stddev=1.0, dtype=_dtypes.float32, name=None):
        seed = self._next_seed()
        return random_ops.stateless_truncated_normal(
            shape, seed, mean, stddev, dtype, name or "truncated_normal"
        )

    def uniform(self, shape, minval=0, maxval=None, dtype=_dtypes.float32, name=None):
        seed = self._next_seed()
        return random_ops.stateless_random_uniform(
            shape, seed, minval, maxval, dtype, name or "stateful_uniform"
        )

    def uniform_full_int(self, shape, dtype=_dtypes.uint64, name=None):
        with get_default_graph().name_scope(name or "stateful_uniform_full_int"):
            return self._full_int(shape, dtype)

    def binomial(self, shape, counts, probs, dtype=_dtypes.int32, name=None):
        return stateless_random_ops.stateless_binomial(shape, self._next_seed(), counts, probs, dtype, name)

    def make_seeds(self, count=1):
        """`count` new seed pairs, a ``[2, count]`` tensor (TF's layout)."""
        with get_default_graph().name_scope("make_seeds"):
            return self._full_int([2, count], _dtypes.int64)

    def split(self, count=1):
        """`count` new generators. Their states are drawn from this one's initial key and the
        split's ordinal (not from its current counter, as TF's: a variable's initial value must
        not read another variable, which `global_variables_initializer` may not have set yet)."""
        self._splits += 1
        initial = self._state.initial_value
        seed = stack([initial[-1], constant(-self._splits, _dtypes.int64)])
        inputs = [int_tensor([2, count], "shape", name="shape"), seed]
        seeds = registry.make_op("StatelessRandomUniformFullInt", inputs, {"dtype": _dtypes.int64}).outputs[0]
        generators = []
        for i in range(count):
            counter, key = seeds[0, i], seeds[1, i]
            words = [counter, 0 * key, key] if self._alg is Algorithm.PHILOX else [counter, key]
            generators.append(Generator(state=stack(words), alg=self._alg))
        return generators

    def reset(self, state):
        """An op that sets the state to `state`."""
        return state_ops.assign(self._state, convert_to_tensor(state, dtype=_dtypes.int64))

    def reset_from_seed(self, seed):
        return self.reset(_state_of(seed, _STATE_SIZE[self._alg]))

    def reset_from_key_counter(self, key, counter):
        return self.reset([*[int(c) for c in np.ravel(counter)], int(np.ravel(key)[0])])

    def skip(self, delta):
        """An op that advances the counter by `delta` draws."""
        step = np.zeros(_STATE_SIZE[self._alg], np.int64)
        step[0] = int(delta)
        return state_ops.assign_add(self._state, constant(step))


_GLOBAL = weakref.WeakKeyDictionary()  # graph -> its global generator


def get_global_generator():
    """`tf.random.get_global_generator`: this graph's global generator (made, non-deterministic,
    on first use; `set_global_generator` replaces it)."""
    graph = get_default_graph()
    if graph not in _GLOBAL:
        _GLOBAL[graph] = Generator.from_non_deterministic_state()
    return _GLOBAL[graph]


def set_global_generator(generator):
    """`tf.random.set_global_generator`: `generator` becomes the global generator of its graph."""
    _GLOBAL[get_default_graph()] = generator
