"""Convolution and pooling kernels (issue 29 §1) against a direct numpy/BLAS formulation and TF.

Each row calls one registered nbdist kernel directly (``kernel(ctx, node, *inputs)``) on the
shapes of a tutorial MNIST CNN's second layer (batch 64, 14x14, 32 -> 64 channels, 5x5 SAME;
2x2 pooling), and times it against the *direct* formulation one would write in numpy: a loop
over the kernel's taps with one GEMM (or one multiply-add) per tap for the convolutions, the
reshape trick for the 2x2 pools. Both are checked equal before timing. TF's own op (eager,
``tf.raw_ops``) is timed as a reference. numpy's BLAS and TF run on one thread
(`threadpoolctl`, TF's intra/inter-op threads); each figure is the median of 7 rounds of
the mean time per call.

    python benchmarks/bench_conv.py            # Markdown table
"""

import os
import platform
import statistics
import time
from types import SimpleNamespace

import numpy as np
from threadpoolctl import threadpool_limits

import nbdist as tf  # noqa: F401 - registers the ops
from nbdist.ops import registry

N, H, C, OUT, K = 64, 14, 32, 64, 5
SAME = {"padding": "SAME", "data_format": "NHWC", "dilations": [1, 1, 1, 1], "strides": [1, 1, 1, 1]}
POOL = {"padding": "VALID", "data_format": "NHWC", "ksize": [1, 2, 2, 1], "strides": [1, 2, 2, 1]}


def _kernel(op_type, attrs):
    node = SimpleNamespace(name=op_type, op=op_type, attr=attrs)
    fn = registry.lookup(op_type).kernel
    return lambda *args: fn(None, node, *args)


def _taps(k):
    return [(i, j) for i in range(k) for j in range(k)]


def direct_conv(x, w):
    k, p = w.shape[0], w.shape[0] // 2
    xp = np.pad(x, ((0, 0), (p, p), (p, p), (0, 0)))
    n, h, wd, c = x.shape
    out = np.zeros((n * h * wd, w.shape[3]), x.dtype)
    for i, j in _taps(k):
        out += xp[:, i : i + h, j : j + wd, :].reshape(-1, c) @ w[i, j]
    return out.reshape(n, h, wd, -1)


def direct_conv_filter(x, dy, k):
    p = k // 2
    xp = np.pad(x, ((0, 0), (p, p), (p, p), (0, 0)))
    _, h, wd, c = x.shape
    g = dy.reshape(-1, dy.shape[3])
    return np.stack([xp[:, i : i + h, j : j + wd, :].reshape(-1, c).T @ g for i, j in _taps(k)]).reshape(
        k, k, c, -1
    )


def direct_conv_input(w, dy):
    k, p = w.shape[0], w.shape[0] // 2
    n, h, wd, _ = dy.shape
    dxp = np.zeros((n, h + 2 * p, wd + 2 * p, w.shape[2]), dy.dtype)
    g = dy.reshape(-1, dy.shape[3])
    for i, j in _taps(k):
        dxp[:, i : i + h, j : j + wd, :] += (g @ w[i, j].T).reshape(n, h, wd, -1)
    return dxp[:, p : p + h, p : p + wd, :]


def direct_depthwise(x, w):
    k, p = w.shape[0], w.shape[0] // 2
    xp = np.pad(x, ((0, 0), (p, p), (p, p), (0, 0)))
    _, h, wd, _ = x.shape
    out = np.zeros_like(x)
    for i, j in _taps(k):
        out += xp[:, i : i + h, j : j + wd, :] * w[i, j, :, 0]
    return out


def _blocks(x):
    n, h, w, c = x.shape
    return x.reshape(n, h // 2, 2, w // 2, 2, c)


def direct_max_pool_grad(x, y, g):
    mask = _blocks(x) == y[:, :, None, :, None, :]  # (no ties in random data)
    return (mask * g[:, :, None, :, None, :]).reshape(x.shape)


def rows():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((N, H, H, C)).astype(np.float32)
    w = rng.standard_normal((K, K, C, OUT)).astype(np.float32)
    dy = rng.standard_normal((N, H, H, OUT)).astype(np.float32)
    a = rng.standard_normal((N, 2 * H, 2 * H, C)).astype(np.float32)
    pooled = _blocks(a).max(axis=(2, 4))
    g = rng.standard_normal(pooled.shape).astype(np.float32)
    wd = rng.standard_normal((K, K, C, 1)).astype(np.float32)
    sizes_x, sizes_w = np.array(x.shape, np.int32), np.array(w.shape, np.int32)
    return [
        (
            "Conv2D",
            f"{list(x.shape)} * {list(w.shape)}",
            _kernel("Conv2D", SAME),
            (x, w),
            direct_conv,
            (x, w),
        ),
        (
            "Conv2DBackpropInput",
            f"{list(dy.shape)} → {list(x.shape)}",
            _kernel("Conv2DBackpropInput", SAME),
            (sizes_x, w, dy),
            direct_conv_input,
            (w, dy),
        ),
        (
            "Conv2DBackpropFilter",
            f"{list(dy.shape)} → {list(w.shape)}",
            _kernel("Conv2DBackpropFilter", SAME),
            (x, sizes_w, dy),
            lambda x, dy: direct_conv_filter(x, dy, K),
            (x, dy),
        ),
        (
            "DepthwiseConv2dNative",
            f"{list(x.shape)} * {list(wd.shape)}",
            _kernel("DepthwiseConv2dNative", SAME),
            (x, wd),
            direct_depthwise,
            (x, wd),
        ),
        (
            "MaxPool",
            f"{list(a.shape)} 2x2/2",
            _kernel("MaxPool", POOL),
            (a,),
            lambda a: _blocks(a).max(axis=(2, 4)),
            (a,),
        ),
        (
            "MaxPoolGrad",
            f"{list(g.shape)} → {list(a.shape)}",
            _kernel("MaxPoolGrad", POOL),
            (a, pooled, g),
            direct_max_pool_grad,
            (a, pooled, g),
        ),
        (
            "AvgPool",
            f"{list(a.shape)} 2x2/2",
            _kernel("AvgPool", POOL),
            (a,),
            lambda a: _blocks(a).mean(axis=(2, 4)),
            (a,),
        ),
    ]


def _tf_call(op_type, args):
    import tensorflow as T  # noqa: N812 - `tf` is nbdist here

    attrs = {"Conv2D": SAME, "Conv2DBackpropInput": SAME, "Conv2DBackpropFilter": SAME}.get(op_type)
    attrs = attrs or (SAME if op_type.startswith("Depthwise") else POOL)
    names = {
        "Conv2D": ("input", "filter"),
        "Conv2DBackpropInput": ("input_sizes", "filter", "out_backprop"),
        "Conv2DBackpropFilter": ("input", "filter_sizes", "out_backprop"),
        "DepthwiseConv2dNative": ("input", "filter"),
        "MaxPool": ("input",),
        "MaxPoolGrad": ("orig_input", "orig_output", "grad"),
        "AvgPool": ("value",),
    }[op_type]
    keep = ("ksize", "strides", "padding", "data_format") + (("dilations",) if "ksize" not in attrs else ())
    kwargs = {k: v for k, v in attrs.items() if k in keep}
    tensors = {n: T.constant(a) for n, a in zip(names, args)}
    fn = getattr(T.raw_ops, op_type)
    return lambda: fn(**tensors, **kwargs).numpy()


def _time(fn, rounds=7, min_s=0.2):
    fn()
    calls = max(1, int(min_s / max(_once(fn), 1e-6)))
    return statistics.median(_once(fn, calls) for _ in range(rounds))


def _once(fn, calls=1):
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls


def main():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    try:
        import tensorflow as T  # noqa: N812 - `tf` is nbdist here

        T.config.threading.set_intra_op_parallelism_threads(1)
        T.config.threading.set_inter_op_parallelism_threads(1)
        tf_version = T.__version__
    except ImportError:
        tf_version = None
    machine = platform.processor() or platform.machine()
    print(f"numpy {np.__version__}, TF {tf_version}, {machine}, 1 thread\n")
    print("| op | shape | nbdist ms | direct numpy ms | nbdist / direct | TF ms |")
    print("| --- | --- | --- | --- | --- | --- |")
    with threadpool_limits(1):
        for op_type, shape, ours, args, direct, direct_args in rows():
            np.testing.assert_allclose(ours(*args), direct(*direct_args), rtol=1e-4, atol=1e-3)
            t_ours = _time(lambda ours=ours, args=args: ours(*args))
            t_direct = _time(lambda direct=direct, direct_args=direct_args: direct(*direct_args))
            t_tf = _time(_tf_call(op_type, args)) if tf_version else float("nan")
            print(
                f"| {op_type} | {shape} | {t_ours * 1e3:.2f} | {t_direct * 1e3:.2f} | "
                f"{t_ours / t_direct:.2f}x | {t_tf * 1e3:.2f} |"
            )


if __name__ == "__main__":
    main()
