"""Loading models without running code from their files.

``load_model`` opens a Keras file (or an ONNX file: read and checked, see :mod:`.onnx`).
Before any framework reads a Keras file, its model configuration is read as plain JSON
(from the ``.keras`` zip or the ``.h5`` attributes) and scanned: a ``Lambda`` layer (whose
function is stored in the file as bytecode) or a layer class that is not built into Keras
is refused unless you opt in with ``safe_mode=False`` (or pass your own classes in
``custom_objects``). Which loader reads an ``.h5`` file is decided by its
``keras_version`` attribute, which is checked too: tf_keras, the only loader for
Keras-2 files, has no safe mode of its own. A configuration declaring more weights than the
file holds, or than the memory this process may use (the machine's, or its container's
limit), is refused before Keras allocates them, as are HDF5 datasets stored in other files
and vocabularies read from a path. The checks and the loader read one private copy of the
file, so a file replaced between the two is never loaded unchecked.

``load_torch_model`` builds a PyTorch module with the team's own factory (code they run
anyway, as pytest runs a conftest.py) and loads a ``state_dict`` file into it with
``torch.load(weights_only=True)``, which reads tensors and never runs code from the file.
"""

from __future__ import annotations

import contextlib
import errno
import importlib
import math
import os
import pickle
import re
import stat
import sys
import tempfile
import warnings
import zipfile
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from ..errors import DataFileError, InvalidArgument, MissingResource, ModelError, UnsafeModel
from ..files import as_path, parse_json
from ..validation import check_bool, physical_memory, printable

#: config keys under which Keras nests layers
_LAYER_KEYS = ("layer", "forward_layer", "backward_layer", "cell")
_MODEL_CLASSES = {"Sequential", "Functional", "Model"}
#: top-level packages a layer's "module" may name without importing foreign code
_KERAS_MODULES = {"keras", "tf_keras"}
#: Keras 3's modules of operations (``keras.ops``) a functional model's nodes may name
_KERAS_OPERATION_MODULES = {
    f"keras.src.ops.{name}" for name in ("core", "einops", "image", "linalg", "math", "nn", "numpy")
}
#: the largest model configuration read (bytes)
MAX_CONFIG = 64 * 1024 * 1024
#: the bytes of weights a configuration may declare beyond those its file holds (a model
#: saved before it was built is built from its configuration when loaded)
UNSTORED_WEIGHTS = 64 * 1024 * 1024
#: the fewest bits a weight is stored in (Keras packs int4-quantized weights two a byte;
#: GPTQ goes lower): the bound on what a file must hold, never above what it does
BITS_PER_WEIGHT = 1
#: the gates of the recurrent layers and cells whose recurrent kernel is gates * units**2
_RECURRENT_GATES = {
    "LSTM": 4,
    "LSTMCell": 4,
    "GRU": 3,
    "GRUCell": 3,
    "SimpleRNN": 1,
    "SimpleRNNCell": 1,
}


def import_keras() -> Any:
    """Keras 3, or a :class:`MissingResource` saying how to install it or, when it cannot
    load the backend ``KERAS_BACKEND`` names, which backends there are."""
    import importlib.util

    try:
        import keras
    except (ImportError, ValueError) as exc:  # ValueError: "Unable to import backend : jx"
        if isinstance(exc, ImportError) and importlib.util.find_spec("keras") is None:
            raise MissingResource(
                f"Keras 3 cannot be imported ({exc}); install it with pip install "
                "'pytest-rnncov[tensorflow]' (or [jax], [torch])"
            ) from None
        named = os.environ.get("KERAS_BACKEND")
        where = (
            f"KERAS_BACKEND={named!r}"
            if named is not None
            else "the backend in ~/.keras/keras.json (or KERAS_HOME's)"
        )
        raise MissingResource(
            f"Keras 3 cannot load {where}: {exc}; set KERAS_BACKEND to tensorflow, jax or "
            "torch (lower case), with that framework installed"
        ) from None
    return keras


def load_model(
    path: str | os.PathLike[str],
    *,
    safe_mode: bool = True,
    custom_objects: Mapping[str, Any] | None = None,
) -> Any:
    """Load a Keras model for testing, never compiled.

    ``.keras`` files load with Keras 3; ``.h5`` files saved by Keras 3 with Keras 3 and
    those saved by Keras 2 with tf_keras (``pip install 'pytest-rnncov[legacy]'``).
    ``safe_mode=True`` (default) refuses files with ``Lambda`` layers or layer classes
    that are neither built into Keras nor given in ``custom_objects``. ``safe_mode=False``
    loads them, **running code stored in the file**: use it only for files you trust.

    ``.onnx`` files are read with ``onnx.load`` and checked (``onnx.checker``, standard
    operators only, external data only from files in the model's folder) and returned as an
    ``onnx.ModelProto``; nothing in an ONNX file runs code, so ``safe_mode`` changes nothing
    there. ``RNNModel`` also takes the ``.onnx`` path itself.

    PyTorch models: ``load_torch_model(factory, weights)``.
    """
    check_bool("safe_mode", safe_mode)
    if custom_objects is not None and not isinstance(custom_objects, Mapping):
        raise InvalidArgument(f"custom_objects={custom_objects!r}; pass a dict of name -> class")
    source = model_path(path)
    suffix = source.suffix.lower()
    custom = dict(custom_objects or {})
    if suffix in (".keras", ".h5", ".hdf5"):
        with _private_copy(source) as copy:
            return _load_keras(copy, source, safe_mode, custom)
    if custom_objects:  # .onnx: model_path admits no other suffix
        raise InvalidArgument(
            "custom_objects is for Keras files; an ONNX file holds no Python classes: "
            "drop custom_objects"
        )
    from .onnx import read_onnx

    return read_onnx(source)


def _load_keras(copy: Path, source: Path, safe_mode: bool, custom: dict[str, Any]) -> Any:
    """``load_model`` of a Keras file: ``copy`` checked and loaded, ``source`` named."""
    if source.suffix.lower() == ".keras":
        config, stored = _keras_zip_config(copy, source)
        _refuse_oversized(config, source, stored)
        if safe_mode:
            _refuse_unsafe(config, source, custom, "keras")
        keras = import_keras()
        try:
            return keras.models.load_model(
                copy, compile=False, safe_mode=safe_mode, custom_objects=custom or None
            )
        except Exception as exc:
            raise ModelError(f"Keras could not load {str(source)!r}: {exc}") from None
    major, config = _h5_version_and_config(copy, source)
    _refuse_oversized(config, source, copy.stat().st_size)
    if safe_mode:
        _refuse_unsafe(config, source, custom, "keras" if major >= 3 else "tf_keras")
    if major >= 3:
        keras = import_keras()
        try:
            return keras.models.load_model(
                copy, compile=False, safe_mode=safe_mode, custom_objects=custom or None
            )
        except Exception as exc:
            raise ModelError(f"Keras could not load {str(source)!r}: {exc}") from None
    try:
        import tf_keras
    except ImportError:
        raise ModelError(
            f"{str(source)!r} was saved by Keras 2 and only loads with tf_keras; install "
            "it with: pip install 'pytest-rnncov[legacy]'"
        ) from None
    try:
        return tf_keras.models.load_model(copy, compile=False, custom_objects=custom or None)
    except Exception as exc:
        raise ModelError(f"tf_keras could not load {str(source)!r}: {exc}") from None


@contextlib.contextmanager
def _private_copy(source: Path) -> Iterator[Path]:
    """A copy of ``source``, of the same name, in a new folder only this user may read
    (in TMPDIR), removed afterwards: the checks and the loader read the same bytes, so a
    file replaced between the two (a Lambda model renamed over a checked one) is never
    loaded unchecked."""
    with tempfile.TemporaryDirectory(prefix="rnncov-model-") as folder:
        copy = Path(folder) / source.name
        # non-blocking: a FIFO put there since model_path looked opens, and is refused;
        # binary: Windows would turn \r\n into \n and stop at \x1a
        flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
        try:
            handle = os.open(source, flags)
        except OSError as exc:
            raise ModelError(f"cannot read {str(source)!r}: {exc.strerror or exc}") from None
        try:
            regular = stat.S_ISREG(os.fstat(handle).st_mode)
        except OSError:
            regular = False
        if not regular:  # a directory, FIFO or device put there since model_path looked
            os.close(handle)
            raise ModelError(f"{str(source)!r} is not a regular file; pass a model file")

        def unwritable(exc: OSError) -> ModelError:
            return ModelError(
                f"cannot copy {str(source)!r} to {folder!r} (the checks and the loader read "
                f"one private copy): {exc.strerror or exc}; set TMPDIR to a folder with room "
                "for it"
            )

        try:  # unbuffered: no write is left to fail when the file closes
            target = open(copy, "xb", buffering=0)
        except OSError as exc:
            os.close(handle)
            raise unwritable(exc) from None
        with os.fdopen(handle, "rb") as original, target:
            while True:
                try:
                    block = original.read(1 << 20)
                except OSError as exc:  # the model's disk, not the copy's
                    raise ModelError(
                        f"cannot read {str(source)!r}: {exc.strerror or exc}"
                    ) from None
                if not block:
                    break
                view = memoryview(block)
                try:
                    while view:
                        written = target.write(view)
                        if not written:
                            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                        view = view[written:]
                except OSError as exc:
                    raise unwritable(exc) from None
        yield copy


#: the suffixes of the model files load_model reads
MODEL_SUFFIXES = (".keras", ".h5", ".hdf5", ".onnx")


def model_path(path: Any) -> Path:
    """``path`` as the model file ``load_model`` reads (an existing ``.keras``, ``.h5`` or
    ``.onnx`` file); anything else is an InvalidArgument saying what to pass. Reads nothing."""
    if not isinstance(path, (str, os.PathLike)):
        raise InvalidArgument(f"path={path!r}; pass the path of a .keras, .h5 or .onnx file")
    source = Path(path)
    if not source.is_file():
        what = "a directory" if source.is_dir() else "no file"
        relative = (
            ""
            if source.is_absolute() or source.is_dir()
            else f" (a relative path is read from the current directory, {os.getcwd()!r}; "
            "from a conftest, Path(__file__).parent / NAME finds the file wherever pytest runs)"
        )
        raise InvalidArgument(
            f"{str(source)!r} is {what}{relative}; pass the path of a .keras, .h5 or .onnx "
            "file (for a SavedModel directory, load the model yourself and pass it to RNNModel)"
        )
    if source.suffix.lower() not in MODEL_SUFFIXES:
        raise InvalidArgument(
            f"cannot load {str(source)!r}: expected a .keras, .h5 or .onnx file; for a "
            "SavedModel directory, load the model yourself and pass it to RNNModel"
        )
    return source


def _keras_zip_config(copy: Path, path: Path) -> tuple[Any, int]:
    """The model configuration of the ``.keras`` file ``copy`` (named ``path``) and the
    bytes its weights file takes in the archive (0 when it has none): what the archive
    stores, not the size a member's header claims (a compressed run of zeros claims any)."""
    try:
        with zipfile.ZipFile(copy) as archive:
            stored = min(
                copy.stat().st_size,
                sum(
                    item.compress_size
                    for item in archive.infolist()
                    if item.filename in ("model.weights.h5", "model.weights.npz")
                ),
            )
            info = archive.getinfo("config.json")
            if info.file_size > MAX_CONFIG:
                raise ModelError(
                    f"{str(path)!r} has a config.json of {info.file_size:,} bytes, "
                    f"more than the {MAX_CONFIG:,} a model configuration needs"
                )
            with archive.open(info) as handle:
                raw = handle.read(MAX_CONFIG + 1)
    except (zipfile.BadZipFile, KeyError, OSError, ValueError, RuntimeError) as exc:
        raise ModelError(f"{str(path)!r} is not a valid .keras file ({exc})") from None
    if len(raw) > MAX_CONFIG:
        raise ModelError(f"{str(path)!r} has a config.json larger than {MAX_CONFIG:,} bytes")
    config = parse_json(
        raw, f"{str(path)!r} is not a valid .keras file: its config.json", ModelError
    )
    return config, stored


def _h5_version_and_config(copy: Path, path: Path) -> tuple[int, Any]:
    """The Keras major version and model configuration of the ``.h5`` file ``copy`` (named
    ``path``), refusing datasets stored outside it (external or virtual storage: a path in
    the file could name any file here, a FIFO or a device)."""
    try:
        import h5py
    except ImportError:
        raise ModelError("loading .h5 files needs h5py: pip install h5py") from None
    outside: list[str] = []

    def note_outside(name: str, item: Any) -> None:
        if isinstance(item, h5py.Dataset) and (item.external or item.is_virtual):
            outside.append(name)

    try:
        with h5py.File(copy, "r") as handle:
            version = handle.attrs.get("keras_version")
            raw = handle.attrs.get("model_config")
            handle.visititems(note_outside)
    except OSError as exc:
        raise ModelError(f"{str(path)!r} is not a readable HDF5 file ({exc})") from None
    if outside:
        raise UnsafeModel(
            f"{str(path)!r} stores dataset {printable(outside[0])!r} in another file (HDF5 "
            "external or virtual storage), which Keras never writes and which could name "
            "any file on this machine; save the model again (model.save(path))"
        )
    if isinstance(version, bytes):
        version = version.decode("utf-8", "replace")
    match = re.fullmatch(r"(\d+)\.\d+(\.\d+)?\S*", str(version)) if version is not None else None
    if match is None:
        raise ModelError(
            f"{str(path)!r} has keras_version {version!r}, not a Keras version such as '2.15.0' "
            "or '3.4.1', so pytest-rnncov cannot tell which loader is safe for it"
        )
    major = int(match.group(1))
    if major not in (2, 3):
        raise ModelError(
            f"{str(path)!r} claims keras_version {version!r}; pytest-rnncov loads "
            "files saved by Keras 2 or 3"
        )
    if raw is None:
        raise ModelError(
            f"{str(path)!r} holds no model configuration (weights only?); build the "
            "model in code and load the weights into it"
        )
    if not isinstance(raw, (bytes, str)) or len(raw) > MAX_CONFIG:
        raise ModelError(
            f"{str(path)!r} has a model configuration that is not JSON text of at "
            f"most {MAX_CONFIG:,} bytes"
        )
    return major, parse_json(raw, f"the model configuration of {str(path)!r}", ModelError)


def _layers(node: Any) -> Iterator[dict[str, Any]]:
    """Every layer configuration in a model configuration, nested ones included."""
    if isinstance(node, list):  # Keras 2.0 Sequential: "config": [layer, ...]
        for item in node:
            yield from _layers(item)
    elif isinstance(node, dict):
        if "class_name" in node:
            yield node
        config = node.get("config")
        if isinstance(config, list):
            yield from _layers(config)
        elif isinstance(config, dict):
            for key in ("layers", "cells"):  # a model's layers; StackedRNNCells' cells
                if isinstance(config.get(key), list):
                    yield from _layers(config[key])
            for key in _LAYER_KEYS:
                if isinstance(config.get(key), dict):
                    yield from _layers(config[key])


def _declared_weights(layer: dict[str, Any]) -> tuple[int, str]:
    """A lower bound on the weights a layer's configuration declares (recurrent kernels,
    embeddings, dense biases; 0 for what it cannot bound), and the fields that say so."""
    settings = layer.get("config")
    if not isinstance(settings, dict):
        return 0, ""

    def count(key: str) -> int:
        value = settings.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0

    def shown(key: str) -> str:
        return f"{key}={_count(count(key)).replace(',', '')}"

    name = layer.get("class_name")
    if not isinstance(name, str):
        return 0, ""  # not a layer Keras builds (_refuse_unsafe names it)
    if name in _RECURRENT_GATES:
        units = count("units")
        return _RECURRENT_GATES[name] * units * units, shown("units")
    if name == "Embedding":
        size = count("input_dim") * count("output_dim")
        return size, f"{shown('input_dim')}, {shown('output_dim')}"
    if name == "Dense":
        return count("units"), shown("units")
    return 0, ""


def _refuse_oversized(config: Any, path: Path, stored: int) -> None:
    """Refuse a configuration declaring more weights (at BITS_PER_WEIGHT each) than the
    file holds beyond UNSTORED_WEIGHTS, or than the memory this process may use: Keras would
    allocate them while building the model, before reading a weight."""
    try:
        layers = [(layer, *_declared_weights(layer)) for layer in _layers(config)]
    except RecursionError:
        return  # _refuse_unsafe says so (safe mode), or the user trusts the file
    total = sum(size for _, size, _ in layers)
    needed, memory = total * BITS_PER_WEIGHT // 8, physical_memory()
    if needed <= UNSTORED_WEIGHTS + stored and needed <= memory:
        return
    layer, size, fields = max(layers, key=lambda item: item[1])
    settings = layer.get("config")
    name = settings.get("name", "?") if isinstance(settings, dict) else "?"
    limit = (
        f"its weights file holds {stored:,} bytes"
        if needed > UNSTORED_WEIGHTS + stored
        else f"this process may use {memory:,} bytes of memory (the machine's, or its "
        "container's limit)"
    )
    raise ModelError(
        f"{str(path)!r} declares at least {_count(total)} weights (layer "
        f"{printable(str(name))!r}, {layer['class_name']} with {fields}: {_count(size)}), at "
        f"least {_count(needed)} bytes, and {limit}; building it would allocate them before "
        "reading the file's weights. The file is damaged or was not saved from this model: "
        "save the model again (model.save(path))"
    )


def _count(number: int) -> str:
    """``number`` with thousands separators, or its order of magnitude past 30 digits (a
    forged configuration's product may have more digits than Python prints)."""
    if number < 10**30:
        return f"{number:,}"
    return f"about 10^{int(number.bit_length() * math.log10(2))}"


def _lambda_functions(node: Any) -> Iterator[str]:
    """Serialised Python functions anywhere in the configuration."""
    if isinstance(node, dict):
        if node.get("class_name") == "__lambda__" or any(
            isinstance(key, str) and key.endswith("_type") and value == "lambda"
            for key, value in node.items()
        ):
            yield str(node.get("name") or node.get("class_name"))
        for value in node.values():
            yield from _lambda_functions(value)
    elif isinstance(node, list):
        for value in node:
            yield from _lambda_functions(value)


def _keras_operation(module: Any, name: str) -> bool:
    """Whether a node is one of Keras 3's own operations (``keras.ops``, such as the
    ``NotEqual`` and ``Any`` a functional model's masking adds, or ``GetItem`` for
    ``x[:, -1]``): Keras builds them from its own modules; the file holds only arguments.
    Only the operation modules themselves are looked in (not Keras' tests beside them)."""
    if module not in _KERAS_OPERATION_MODULES:
        return False
    import importlib

    try:
        keras = import_keras()
        found = getattr(importlib.import_module(module), name, None)
    except (ImportError, MissingResource):  # tf_keras without Keras 3 (or its backend)
        return False
    return (
        isinstance(found, type)
        and issubclass(found, keras.Operation)
        and not issubclass(found, keras.Layer)
    )


def _unsafe_parts(config: Any, custom: dict[str, Any], layers_module: Any) -> list[str]:
    problems = []
    for layer in _layers(config):
        name = str(layer.get("class_name"))
        settings = layer.get("config")
        layer_name = settings.get("name", "?") if isinstance(settings, dict) else "?"
        module = layer.get("module")
        registered = layer.get("registered_name")
        if isinstance(settings, dict) and isinstance(settings.get("vocabulary"), str):
            problems.append(  # StringLookup, IntegerLookup, TextVectorization
                f"layer {layer_name!r} reading its vocabulary from the path "
                f"{printable(settings['vocabulary'][:200])!r} (any file on this machine)"
            )
        if name == "Lambda":
            problems.append(
                f"Lambda layer {layer_name!r} (its function is code stored in the file)"
            )
        elif _keras_operation(module, name):
            continue
        elif name not in _MODEL_CLASSES and name not in custom and not hasattr(layers_module, name):
            problems.append(f"custom layer {layer_name!r} of class {name!r}")
        elif (
            isinstance(module, str)
            and module.split(".")[0] not in _KERAS_MODULES
            and name not in custom
            and registered not in custom
        ):
            problems.append(f"layer {layer_name!r} from module {module!r} (importing it runs code)")
    problems += [f"serialised Python function {name!r}" for name in _lambda_functions(config)]
    return problems


def _refuse_unsafe(config: Any, path: Path, custom: dict[str, Any], framework: str) -> None:
    if framework == "keras":
        layers_module: Any = import_keras().layers
    else:
        try:
            import tf_keras
        except ImportError:
            raise ModelError(
                f"{str(path)!r} was saved by Keras 2 and only loads with tf_keras; install it "
                "with: pip install 'pytest-rnncov[legacy]'"
            ) from None
        layers_module = tf_keras.layers
    try:
        problems = _unsafe_parts(config, custom, layers_module)
    except RecursionError:
        raise UnsafeModel(
            f"{str(path)!r} nests its model configuration too deeply to be "
            "checked; load it only if you trust it, with safe_mode=False"
        ) from None
    if problems:
        paths = sum("reading its vocabulary" in problem for problem in problems)
        advice = []
        if paths:
            advice.append("save the model with Keras 3, which keeps a vocabulary inside the file")
        if paths < len(problems):
            advice.append("pass your own classes in custom_objects={...}")
        said = "; ".join(advice)
        raise UnsafeModel(
            f"{str(path)!r} has {', '.join(dict.fromkeys(problems))}; loading it would run code "
            f"or read files it names. {said[0].upper()}{said[1:]}, or, only for a file you "
            "trust, load_model(path, safe_mode=False)"
        )


# -- PyTorch -----------------------------------------------------------------------------
#: how many keys or names an error message lists
_SHOWN = 5
_SAVE_HINT = "save the weights with torch.save(model.state_dict(), path)"


def load_torch_model(factory: str | Callable[[], Any], weights: str | os.PathLike[str]) -> Any:
    """Build a PyTorch model with ``factory`` and load the ``state_dict`` file ``weights``.

    ``factory`` is a callable that returns the ``torch.nn.Module`` when called with no
    arguments, or its import path ``"package.module:function"`` (looked up on
    ``sys.path``). **Importing the module runs its code**, as pytest runs a conftest.py:
    name only your own modules. ``weights`` is a file written by
    ``torch.save(model.state_dict(), path)``, read before the factory runs with
    ``torch.load(path, weights_only=True, map_location="cpu")``, which never runs code from
    the file: a file holding more than tensors (a whole pickled module) raises
    ``UnsafeModel``. The file's keys and shapes must match the module's exactly. Returns
    the module in eval mode.
    """
    if isinstance(factory, str):
        _parse_factory(factory)  # a malformed path is refused before anything is read
        name = factory
    elif callable(factory):
        name = getattr(factory, "__qualname__", None) or repr(factory)
    else:
        raise InvalidArgument(
            f"factory={factory!r}; pass a function that returns the torch.nn.Module, "
            "or its import path 'package.module:function'"
        )
    try:
        import torch
    except ImportError:
        raise MissingResource(
            "PyTorch models need torch: pip install 'pytest-rnncov[torch]'"
        ) from None
    source = as_path(weights, "weights")
    state = _state_dict(torch, source)
    make = _import_factory(torch, factory) if isinstance(factory, str) else factory
    try:
        model = make()
    except SystemExit as exc:  # a factory must not end the process (a CI step would pass)
        raise ModelError(
            f"the factory {name!r} called sys.exit({exc.code!r}); it is called with no "
            "arguments and must return the torch.nn.Module"
        ) from None
    except Exception as exc:
        raise ModelError(
            f"the factory {name!r} raised {type(exc).__name__}: {exc}; it is called with "
            "no arguments and must return the torch.nn.Module"
        ) from exc
    if not isinstance(model, torch.nn.Module):
        raise ModelError(
            f"the factory {name!r} returned {_kind(model)}, not a torch.nn.Module; "
            "return the model itself"
        )
    _check_fit(model, state, source, name)
    try:
        model.load_state_dict(state, strict=True)
    except (RuntimeError, ValueError) as exc:
        raise ModelError(f"weights {str(source)!r} do not load into {name!r}: {exc}") from None
    return model.eval()


def _parse_factory(text: str) -> tuple[str, str]:
    """``"package.module:function"`` as (module, attribute path)."""
    module_name, colon, attr = text.partition(":")
    problem = None
    if not colon:
        problem = "has no ':' between the module and the function"
    elif ":" in attr:
        problem = "has more than one ':'"
    elif not module_name.strip() or not attr.strip():
        problem = "names no module" if not module_name.strip() else "names no function"
    else:
        bad = [p for p in (*module_name.split("."), *attr.split(".")) if not p.isidentifier()]
        if bad:
            problem = f"holds {bad[0]!r}, which is not a Python name"
    if problem is not None:
        raise InvalidArgument(
            f"PyTorch factory {text!r} {problem}; give it as module:function, e.g. "
            "mymodels:make_model for make_model() in mymodels.py (pkg.models:make_model "
            "in a package)"
        )
    return module_name, attr


def _state_dict(torch: Any, source: Path) -> Any:
    """The ``state_dict`` in ``source``, read with ``weights_only=True`` (never runs code)."""
    if not source.is_file():
        what = (
            "is a directory"
            if source.is_dir()
            else "is not a regular file"
            if source.exists()
            else "does not exist"
        )
        raise DataFileError(f"weights file {str(source)!r} {what}; {_SAVE_HINT}")
    _check_archive(source)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch's notes on pickle protocols
            state = torch.load(source, weights_only=True, map_location="cpu")
    except pickle.UnpicklingError as exc:
        named = re.search(r"GLOBAL (\S+)", str(exc))
        if named is None:
            raise DataFileError(
                f"weights file {str(source)!r} is not a file of tensors written by "
                f"torch.save; {_SAVE_HINT}"
            ) from None
        raise UnsafeModel(
            f"weights file {str(source)!r} holds more than tensors: it names "
            f"{named.group(1)} (a whole pickled module or another object), and loading that "
            "would run code, so torch.load(weights_only=True) refused it. Save only the "
            "weights: torch.save(model.state_dict(), path)"
        ) from None
    except Exception as exc:  # torch.load raises many kinds on a file it cannot read
        raise DataFileError(
            f"weights file {str(source)!r} is not a file written by torch.save "
            f"({type(exc).__name__}: {exc}); {_SAVE_HINT}"
        ) from None
    if isinstance(state, Mapping):
        bad = [(k, v) for k, v in state.items() if not isinstance(v, torch.Tensor)]
        if not bad and all(isinstance(k, str) for k in state):
            return state
        what = f"a dict whose {bad[0][0]!r} is {_kind(bad[0][1])}" if bad else "a dict"
    else:
        what = _kind(state)
    raise DataFileError(
        f"weights file {str(source)!r} holds {what}, not a state_dict (parameter names "
        f"to tensors); {_SAVE_HINT}"
    )


def _check_archive(source: Path) -> None:
    """Refuse a zip archive (what torch.save writes) that unpacks to more than it holds:
    torch.save stores its entries uncompressed, so compressed ones, or entries that claim
    more bytes than the file has, would make torch.load allocate what the file only
    claims (a 1 MB file unpacked to 1 GB before any check)."""
    import zipfile

    if not zipfile.is_zipfile(source):
        return  # the legacy format, read as its bytes are: torch.load says what is wrong
    try:
        with zipfile.ZipFile(source) as archive:
            entries = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError):
        return
    packed = [e.filename for e in entries if e.compress_type != zipfile.ZIP_STORED]
    claimed, size = sum(e.file_size for e in entries), source.stat().st_size
    if packed or claimed > size:
        why = (
            f"its entry {packed[0]!r} is compressed, which torch.save never does"
            if packed
            else f"its entries claim {claimed:,} bytes, more than the file's {size:,}"
        )
        raise DataFileError(
            f"weights file {str(source)!r} is a zip archive torch.save did not write as it "
            f"is: {why}, so reading it could take far more memory than the file; "
            f"{_SAVE_HINT}"
        )


def _import_factory(torch: Any, text: str) -> Callable[[], Any]:
    """The callable ``text`` names, its module imported (running the module's code)."""
    module_name, attr = _parse_factory(text)
    try:
        module = importlib.import_module(module_name)
    except SystemExit as exc:  # a module must not end the process at import
        raise ModelError(
            f"importing {module_name!r} for the factory {text!r} called sys.exit({exc.code!r})"
            "; guard the module's script part with if __name__ == '__main__':"
        ) from None
    except Exception as exc:
        missing = exc.name if isinstance(exc, ModuleNotFoundError) else None
        if missing and f"{module_name}.".startswith(f"{missing}."):
            here = os.getcwd()
            on_path = any(os.path.abspath(p or os.curdir) == here for p in sys.path)
            searched = "with" if on_path else "without"
            file = missing.replace(".", "/")
            if not on_path and (
                os.path.isfile(f"{file}.py") or os.path.isfile(os.path.join(file, "__init__.py"))
            ):  # a script's sys.path starts with its own folder, not the current one
                raise InvalidArgument(
                    f"PyTorch factory {text!r}: {file}.py (or {file}/) is in the current "
                    f"directory {here!r}, which is not on sys.path (a script's sys.path "
                    "starts with the script's own folder); add it: PYTHONPATH=. or "
                    f"sys.path.insert(0, {here!r}) before the call"
                ) from None
            raise InvalidArgument(
                f"PyTorch factory {text!r}: no module {missing!r} on sys.path ({searched} "
                f"the current directory {here!r}); run from the folder that holds "
                f"{file}.py (or the package {file}/), or add that folder to PYTHONPATH"
            ) from None
        raise ModelError(
            f"importing {module_name!r} for the factory {text!r} raised "
            f"{type(exc).__name__}: {exc}; fix the module (importing it runs its code)"
        ) from exc
    found: Any = module
    for part in attr.split("."):
        try:
            found = getattr(found, part)
        except AttributeError:
            offered = _offered(found, module.__name__)
            raise InvalidArgument(
                f"PyTorch factory {text!r}: {module_name!r} "
                f"({getattr(module, '__file__', None) or 'no file'}) has no {part!r}"
                + (f"; it defines {offered}" if offered else "")
            ) from None
    if isinstance(found, torch.nn.Module) or not callable(found):
        raise InvalidArgument(
            f"PyTorch factory {text!r} is {_kind(found)}, not a factory; name a function "
            "or class that returns the torch.nn.Module when called with no arguments"
        )
    return found  # type: ignore[no-any-return]


def _offered(owner: Any, module_name: str) -> str:
    """The public callables ``owner`` defines in ``module_name``, listed briefly."""
    names = [
        name
        for name, value in getattr(owner, "__dict__", {}).items()
        if not name.startswith("_")
        and callable(value)
        and getattr(value, "__module__", None) == module_name
    ]
    return _listed(names)


def _check_fit(model: Any, state: Mapping[str, Any], source: Path, name: str) -> None:
    """Refuse weights whose keys or shapes differ from the module's, naming them."""
    expected = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    given = {k: tuple(v.shape) for k, v in state.items()}
    problems = [
        f"{label} {_listed(keys)}"
        for label, keys in (
            ("missing", [k for k in expected if k not in given]),
            ("unexpected", [k for k in given if k not in expected]),
            (
                "other shapes",
                [
                    f"{k} {given[k]} (the module's {expected[k]})"
                    for k in expected
                    if k in given and given[k] != expected[k]
                ],
            ),
        )
        if keys
    ]
    if problems:
        raise ModelError(
            f"weights file {str(source)!r} does not fit the module {name!r} builds: "
            f"{'; '.join(problems)}. Load the weights saved from that architecture "
            "(torch.save(model.state_dict(), path))"
        )


def _listed(names: list[str]) -> str:
    more = len(names) - _SHOWN
    return ", ".join(names[:_SHOWN]) + (f" and {more} more" if more > 0 else "")


def _kind(value: Any) -> str:
    kind = type(value)
    return f"a {kind.__module__}.{kind.__qualname__}".replace("a builtins.", "a ")
