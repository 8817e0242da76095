"""A float64 arctangent from elementary operations, for the ONNX export
(:mod:`marinenav.planner.export`).

ONNX Runtime has no float64 ``Atan`` kernel, yet deterministic actors squash their output with
``(2/pi) atan``. The ONNX export therefore traces its module under :class:`ElementaryAtan`, a
``TorchFunctionMode`` that computes every float64 ``atan`` with :func:`atan_elementary`: Cephes'
double-precision arctangent (range reduction, then a rational approximation) written with
``+ - * /``, ``abs``, ``sign`` and ``where`` only, equal to ``torch.atan`` to float64 rounding.
The TorchScript export (what the C++ planner loads) keeps ``torch.atan``: libtorch computes it
in float64.
"""

from __future__ import annotations

import math

import torch
from torch.overrides import TorchFunctionMode

# Cephes' coefficients of atan(x) = x + x z P(z) / Q(z), z = x^2, on |x| <= 0.66 after reduction
_ATAN_P = (-8.750608600031904122785e-1, -1.615753718733365076637e1, -7.500855792314704667340e1,
           -1.228866684490136173410e2, -6.485021904942025371773e1)  # fmt: skip
_ATAN_Q = (2.485846490142306297962e1, 1.650270098316988542046e2, 4.328810604912902668951e2,
           4.853903996359136964868e2, 1.945506571482613964425e2)  # fmt: skip
_ATAN_MOREBITS = 6.123233995736765886130e-17  # pi/2 - float64(pi/2)
_TAN_3PI_8 = 2.41421356237309504880


def atan_elementary(x: torch.Tensor) -> torch.Tensor:
    """``atan(x)`` from ``+ - * /``, ``abs``, ``sign`` and ``where`` only (Cephes ``atan``: full
    float64 precision): exportable to ONNX graphs that ONNX Runtime runs in float64."""
    a = x.abs()
    big = a > _TAN_3PI_8
    mid = (a > 0.66) & ~big
    one = torch.ones_like(a)
    reduced = torch.where(
        big, -1.0 / torch.where(big, a, one), torch.where(mid, (a - 1) / (a + 1), a)
    )
    zero = torch.zeros_like(a)
    offset = torch.where(big, math.pi / 2, torch.where(mid, math.pi / 4 + zero, zero))
    extra = torch.where(big, _ATAN_MOREBITS, torch.where(mid, 0.5 * _ATAN_MOREBITS + zero, zero))
    z = reduced * reduced
    p = torch.full_like(z, _ATAN_P[0])
    for c in _ATAN_P[1:]:
        p = p * z + c
    q = z + _ATAN_Q[0]
    for c in _ATAN_Q[1:]:
        q = q * z + c
    y = offset + (reduced * (z * p / q) + reduced + extra)
    return torch.sign(x) * y


_ATAN = (torch.atan, torch.arctan, torch.Tensor.atan, torch.Tensor.arctan)


class ElementaryAtan(TorchFunctionMode):
    """While active, float64 ``atan`` is computed by :func:`atan_elementary` (what the ONNX
    export traces; other dtypes and operations are left alone)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _ATAN and args and args[0].dtype == torch.float64:
            return atan_elementary(args[0])
        return func(*args, **kwargs)
