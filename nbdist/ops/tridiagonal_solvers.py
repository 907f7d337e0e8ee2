"""numpy: `TridiagonalSolve`'s three CPU algorithms as TF runs them, so that ill-conditioned and
singular systems give TF's values: `thomas` (no pivoting; a zero pivot makes that system NaN),
`pivoted` (Gaussian elimination with partial pivoting, as LAPACK's dgtsv; an exactly singular
system is NaN) and `solve_perturbed` (``perturb_singular``, after LAPACK's xLAGTF / xLAGTS: row
interchanges chosen on scaled pivots, and in back substitution a tiny pivot is nudged by
multiples of ``eps * max|U|`` so that a singular system, as in inverse iteration, still gives a
finite solution). Diagonals are compact ``[..., 3, n]``, right-hand sides ``[..., n, k]``, with
one batch shape."""

import numpy as np

__all__ = ["pivoted", "solve_perturbed", "thomas"]


def thomas(diags, rhs):
    """The Thomas algorithm over every system of the batch at once."""
    sup, main, sub = diags[..., 0, :], diags[..., 1, :], diags[..., 2, :]
    n = main.shape[-1]
    c, x = np.zeros_like(main), rhs.astype(np.result_type(diags, rhs), copy=True)
    failed = np.zeros(main.shape[:-1], bool)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for i in range(n):
            denom = main[..., i] - sub[..., i] * c[..., i - 1] if i else main[..., 0]
            failed |= denom == 0
            c[..., i] = sup[..., i] / denom
            previous = sub[..., i, None] * x[..., i - 1, :] if i else 0
            x[..., i, :] = (rhs[..., i, :] - previous) / denom[..., None]
        for i in range(n - 2, -1, -1):
            x[..., i, :] -= c[..., i, None] * x[..., i + 1, :]
    x[failed] = np.nan
    return x


def pivoted(diags, rhs):
    """Gaussian elimination with partial pivoting over every system of the batch at once (each
    system takes its own row interchanges)."""
    sup, main, sub = diags[..., 0, :], diags[..., 1, :], diags[..., 2, :]
    n = main.shape[-1]
    x = rhs.astype(np.result_type(diags, rhs), copy=True)
    u0, u1, u2 = main.astype(x.dtype, copy=True), sup.astype(x.dtype, copy=True), np.zeros_like(main, x.dtype)
    failed = np.zeros(main.shape[:-1], bool)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for i in range(n - 1):
            keep = np.abs(u0[..., i]) >= np.abs(sub[..., i + 1])
            failed |= keep & (u0[..., i] == 0)
            f_keep = sub[..., i + 1] / u0[..., i]
            f_swap = u0[..., i] / sub[..., i + 1]
            ui, ui1, xi, xi1 = (
                u0[..., i].copy(),
                u1[..., i].copy(),
                x[..., i, :].copy(),
                x[..., i + 1, :].copy(),
            )
            u0[..., i + 1] = np.where(keep, main[..., i + 1] - f_keep * ui1, ui1 - f_swap * main[..., i + 1])
            u0[..., i] = np.where(keep, ui, sub[..., i + 1])
            u1[..., i] = np.where(keep, ui1, main[..., i + 1])
            x[..., i + 1, :] = np.where(
                keep[..., None], xi1 - f_keep[..., None] * xi, xi - f_swap[..., None] * xi1
            )
            x[..., i, :] = np.where(keep[..., None], xi, xi1)
            if i != n - 2:
                u1[..., i + 1] = np.where(keep, sup[..., i + 1], -f_swap * sup[..., i + 1])
                u2[..., i] = np.where(keep, 0, sup[..., i + 1])
        failed |= u0[..., n - 1] == 0
        x[..., n - 1, :] /= u0[..., n - 1, None]
        if n > 1:
            x[..., n - 2, :] = (x[..., n - 2, :] - u1[..., n - 2, None] * x[..., n - 1, :]) / u0[
                ..., n - 2, None
            ]
        for i in range(n - 3, -1, -1):
            row = x[..., i, :] - u1[..., i, None] * x[..., i + 1, :] - u2[..., i, None] * x[..., i + 2, :]
            x[..., i, :] = row / u0[..., i, None]
    x[failed] = np.nan
    return x


def _adjusted_pivot(perturb, pivot, row, safemin):
    """``(pivot, row)`` with `pivot` moved away from zero until ``row / pivot`` cannot overflow."""
    if abs(pivot) >= 1:
        return pivot, row
    bignum = 1 / safemin
    perturb = np.copysign(max(abs(perturb), safemin), np.real(pivot))
    largest = np.max(np.abs(row)) if row.size else 0.0
    while abs(pivot) < 1:
        size = abs(pivot)
        if size < safemin:
            if size == 0 or largest * safemin > size:
                pivot, perturb = pivot + perturb, perturb * 2
                continue
            return pivot * bignum, row * bignum
        if largest > size * bignum:
            pivot, perturb = pivot + perturb, perturb * 2
            continue
        break
    return pivot, row


def _factor(sup, main, sub, rhs):
    """The pivoted factor ``U`` (diagonal and two superdiagonals as columns) and ``L^-1 P rhs``."""
    n = main.shape[0]
    u = np.zeros((n, 3), main.dtype)
    x = rhs.astype(np.result_type(main, rhs), copy=True)
    u[0, 0], u[0, 1] = main[0], sup[0]
    scale1 = abs(u[0, 0]) + abs(u[0, 1])
    for k in range(n - 1):
        u[k + 1, 0] = main[k + 1]
        scale2 = abs(sub[k + 1]) + abs(u[k + 1, 0]) + (abs(sup[k + 1]) if k < n - 2 else 0.0)
        if sub[k + 1] == 0:
            scale1, u[k + 1, 1], u[k, 2] = scale2, sup[k + 1], 0
            x[k + 1] = rhs[k + 1]
            continue
        piv1 = 0.0 if u[k, 0] == 0 else abs(u[k, 0]) / scale1
        if abs(sub[k + 1]) / scale2 <= piv1:
            factor = sub[k + 1] / u[k, 0]
            scale1 = scale2
            u[k + 1, 0] = main[k + 1] - factor * u[k, 1]
            u[k + 1, 1], u[k, 2] = sup[k + 1], 0
            x[k + 1] = rhs[k + 1] - factor * x[k]
        else:
            factor = u[k, 0] / sub[k + 1]
            u[k, 0], u[k + 1, 0], u[k, 1] = sub[k + 1], u[k, 1] - factor * main[k + 1], main[k + 1]
            if k < n - 2:
                u[k, 2], u[k + 1, 1] = sup[k + 1], -factor * sup[k + 1]
            x[k + 1] = x[k] - factor * rhs[k + 1]
            x[k] = rhs[k + 1]
    return u, x


def solve_perturbed(sup, main, sub, rhs):
    """One system: `sup`, `main`, `sub` ``[n]`` (compact: ``sup[-1]``, ``sub[0]`` ignored), `rhs`
    ``[n, k]``."""
    finfo = np.finfo(np.real(main).dtype)
    safemin = max(finfo.tiny, (1 + finfo.eps) / finfo.max)
    n = main.shape[0]
    if n == 0:
        return rhs.copy()
    if n == 1:
        pivot, row = _adjusted_pivot(finfo.eps * abs(main[0]), main[0], rhs[0].copy(), safemin)
        return (row * (1 / pivot))[None]
    u, x = _factor(sup, main, sub, rhs)
    largest = max(np.max(np.abs(u[: n - 2])) if n > 2 else 0.0, abs(main[0]), abs(sup[0]), abs(u[n - 1, 0]))
    tol = finfo.eps * largest
    pivot, row = _adjusted_pivot(tol, u[n - 1, 0], x[n - 1].copy(), safemin)
    x[n - 1] = row * (1 / pivot)
    for k in range(n - 2, -1, -1):
        row = x[k] - u[k, 1] * x[k + 1] - (u[k, 2] * x[k + 2] if k < n - 2 else 0)
        pivot, row = _adjusted_pivot(np.copysign(tol, np.real(u[k, 0])), u[k, 0], row, safemin)
        x[k] = row * (1 / pivot)
    return x
