"""`tf.make_template`: a function whose variables are made on the first call and shared after.

A `Template` opens a variable scope named after it (``lin``, made unique: ``lin_1``) on its
first call, or when it is made with ``create_scope_now_=True``, and re-enters that scope on
every call: `tf.get_variable` inside creates on the first call and reuses afterwards. As in
TF, each call's ops get a name scope of their own (``lin/``, ``lin_1/``, ``outer/lin/``)
while the variables keep the scope's names (``lin/w``); a call after the first that makes a
new trainable variable (a `tf.Variable` where `tf.get_variable` was meant) raises.
"""

import functools
import traceback

from nbdist.graph.graph import GraphKeys, get_collection, get_collection_ref
from nbdist.ops.variable_scope import variable_scope

__all__ = ["make_template"]


def make_template(name_, func_, create_scope_now_=False, unique_name_=None, custom_getter_=None, **kwargs):
    """`tf.make_template`: wraps `func_` so that it shares its variables between calls.

    Args:
        name_: the scope's name, made unique (``name_``, ``name__1``, ...) as a
            `tf.variable_scope`'s default name.
        func_: the function; it must make its variables with `tf.get_variable`.
        create_scope_now_: open the scope now (its name then does not depend on where the
            template is first called).
        unique_name_: the scope's name, used as given (not made unique).
        custom_getter_: a custom getter for the template's variable scope.
        **kwargs: keyword arguments bound to `func_`.

    Returns:
        A `Template`: call it as `func_`.

    Raises:
        ValueError: if `name_` is None.
    """
    if kwargs:
        func_ = functools.partial(func_, **kwargs)
    return Template(
        name_,
        func_,
        create_scope_now=create_scope_now_,
        unique_name=unique_name_,
        custom_getter=custom_getter_,
    )


def _skip_common_stack_elements(stacktrace, base_case):
    for i, (trace, base) in enumerate(zip(stacktrace, base_case)):
        if trace != base:
            return stacktrace[i:]
    return stacktrace[-1:]


class Template:
    """What `make_template` returns: `func` with its variables shared across calls."""

    def __init__(self, name, func, create_scope_now=False, unique_name=None, custom_getter=None):
        self._func = func
        self._stacktrace = traceback.format_stack()[:-2]
        self._name = name
        self._unique_name = unique_name
        self._custom_getter = custom_getter
        if name is None:
            raise ValueError("name cannot be None.")
        self._variable_scope = None
        if create_scope_now:
            # The scope only (TF's pure variable scope): no name scope is opened here.
            with variable_scope(
                unique_name, default_name=name, custom_getter=custom_getter, auxiliary_name_scope=False
            ) as vs:
                self._variable_scope = vs
        self._variables_created = False

    def __call__(self, *args, **kwargs):
        if self._variable_scope is not None:
            with variable_scope(self._variable_scope, reuse=self._variables_created):
                return self._call_func(args, kwargs)
        with variable_scope(self._unique_name, self._name, custom_getter=self._custom_getter) as vs:
            self._variable_scope = vs
            return self._call_func(args, kwargs)

    def _call_func(self, args, kwargs):
        try:
            if not self._variables_created:
                result = self._func(*args, **kwargs)
                self._variables_created = True
                return result
            trainable_at_start = len(get_collection_ref(GraphKeys.TRAINABLE_VARIABLES))
            result = self._func(*args, **kwargs)
            trainable = get_collection_ref(GraphKeys.TRAINABLE_VARIABLES)
            if trainable_at_start != len(trainable):
                raise ValueError(
                    "Trainable variable created when calling a template after the first time, perhaps "
                    f"you used tf.Variable when you meant tf.get_variable: {trainable[trainable_at_start:]}"
                )
            return result
        except Exception as exc:
            # TF's: the error says where the template was made.
            trace = "".join(_skip_common_stack_elements(self._stacktrace, traceback.format_stack()))
            first = exc.args[0] if exc.args else ""
            exc.args = (f"{first}\n\noriginally defined at:\n{trace}", *exc.args[1:])
            raise

    @property
    def name(self):
        """The name given to the template."""
        return self._name

    @property
    def func(self):
        """The function called (with the keyword arguments given to `make_template` bound)."""
        return self._func

    @property
    def variable_scope(self):
        """The template's `VariableScope` (None before the first call, unless made now)."""
        return self._variable_scope

    @property
    def var_scope(self):
        return self._variable_scope

    @property
    def variable_scope_name(self):
        """The scope's name with a trailing ``/`` (the prefix of the template's variables)."""
        if self._variable_scope is None:
            return None
        name = self._variable_scope.name
        return name if not name or name.endswith("/") else name + "/"

    def _collection(self, key):
        return get_collection(key, self.variable_scope_name) if self._variables_created else []

    @property
    def global_variables(self):
        return self._collection(GraphKeys.GLOBAL_VARIABLES)

    @property
    def local_variables(self):
        return self._collection(GraphKeys.LOCAL_VARIABLES)

    @property
    def trainable_variables(self):
        return self._collection(GraphKeys.TRAINABLE_VARIABLES)

    @property
    def non_trainable_variables(self):
        trainable = {id(v) for v in self.trainable_variables}
        return [v for v in self.global_variables if id(v) not in trainable]

    @property
    def variables(self):
        """The template's global and local variables."""
        return self.global_variables + self.local_variables
