"""``RNNModel``: the one public wrapper, which picks the adapter for a model's framework."""

from __future__ import annotations

import os
from abc import ABC
from typing import Any

import numpy as np

from .base import framework_of
from .keras import KerasModel
from .onnx import OnnxModel
from .torch import TorchModel


class RNNModel(ABC):
    """A model with one of its recurrent layers made traceable.

    ``RNNModel(model, layer=None, *, direction="forward", output=None, batch_size=None,
    trace_on="auto", recompute=False)`` returns the adapter for the model's framework: a
    ``KerasModel`` (Keras 3 on any backend, tf_keras), a ``TorchModel`` (PyTorch) or an
    ``OnnxModel`` (a ``.onnx`` path or an ``onnx.ModelProto``, run by ONNX Runtime).
    ``layer`` picks the recurrent layer or node (by name, by index, or the first one);
    ``direction`` a bidirectional layer's forward or backward half; ``output`` which output
    of a multi-output model ``predict`` returns.
    Inputs are fed in batches of ``batch_size``, so any number of inputs runs in bounded
    memory (a framework call has a fixed cost: smaller batches cost more per input); without
    it, 2,048 on the host (256 where a PyTorch layer's gates are computed beside the next
    call) and, on the device path (``trace_on``: where the model runs on an accelerator),
    as many as keep a batch's trace within about 2 GiB.
    The trace comes from the model's own forward pass (the layer's ``h``; gates from one
    batched matmul); ``recompute=True`` runs the layer again from its weights instead (the
    reference kernel, for checks). Every adapter is an instance of ``RNNModel``.
    """

    def __new__(cls, model: Any = None, *args: Any, **kwargs: Any) -> Any:
        adapter: Any = (
            OnnxModel
            if _is_onnx(model)
            else TorchModel
            if framework_of(model) == "torch"
            else KerasModel
        )
        args = tuple(_plain(a) for a in args)
        kwargs = {key: _plain(value) for key, value in kwargs.items()}
        return adapter(model, *args, **kwargs)


def _is_onnx(model: Any) -> bool:
    """A path (only .onnx files are read) or an ``onnx.ModelProto``."""
    kind = type(model)
    return isinstance(model, (str, os.PathLike)) or (
        kind.__module__.startswith("onnx") and kind.__name__ == "ModelProto"
    )


def _plain(value: Any) -> Any:
    """numpy integers (e.g. a layer index from np.argmax) as Python ints."""
    return int(value) if isinstance(value, np.integer) else value


RNNModel.register(KerasModel)
RNNModel.register(TorchModel)
RNNModel.register(OnnxModel)
