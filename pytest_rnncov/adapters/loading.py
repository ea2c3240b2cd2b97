"""``load_model``: open a model file without running code from it.

Before any framework reads the file, its model configuration is read as plain JSON (from
the ``.keras`` zip or the ``.h5`` attributes) and scanned: a ``Lambda`` layer (whose
function is stored in the file as bytecode) or a layer class that is not built into Keras
is refused unless you opt in with ``safe_mode=False`` (or pass your own classes in
``custom_objects``). Which loader reads an ``.h5`` file is decided by its
``keras_version`` attribute, which is checked too: tf_keras, the only loader for Keras-2
files, has no safe mode of its own.
"""

from __future__ import annotations

import os
import re
import zipfile
from pathlib import Path
from typing import Any, Iterator, Mapping

from ..errors import InvalidArgument, ModelError, UnsafeModel
from ..files import parse_json
from ..validation import check_bool

#: config keys under which Keras nests layers
_LAYER_KEYS = ("layer", "forward_layer", "backward_layer", "cell")
_MODEL_CLASSES = {"Sequential", "Functional", "Model"}
#: top-level packages a layer's "module" may name without importing foreign code
_KERAS_MODULES = {"keras", "tf_keras"}
#: the largest model configuration read (bytes)
MAX_CONFIG = 64 * 1024 * 1024


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

    PyTorch models are not loaded from files here: build the module and load its weights
    with ``module.load_state_dict(torch.load(path, weights_only=True))``.
    """
    check_bool("safe_mode", safe_mode)
    if custom_objects is not None and not isinstance(custom_objects, Mapping):
        raise InvalidArgument(f"custom_objects={custom_objects!r}; pass a dict of name -> class")
    if not isinstance(path, (str, os.PathLike)):
        raise InvalidArgument(f"path={path!r}; pass the path of a .keras or .h5 file")
    source = Path(path)
    if not source.is_file():
        what = "a directory" if source.is_dir() else "no file"
        raise InvalidArgument(
            f"{str(source)!r} is {what}; pass the path of a .keras or .h5 file (for a "
            "SavedModel directory, load the model yourself and pass it to RNNModel)"
        )
    suffix = source.suffix.lower()
    custom = dict(custom_objects or {})
    if suffix == ".keras":
        config = _keras_zip_config(source)
        if safe_mode:
            _refuse_unsafe(config, source, custom, "keras")
        import keras

        try:
            return keras.models.load_model(
                source, compile=False, safe_mode=safe_mode, custom_objects=custom or None
            )
        except Exception as exc:
            raise ModelError(f"Keras could not load {str(source)!r}: {exc}") from None
    if suffix in (".h5", ".hdf5"):
        major, config = _h5_version_and_config(source)
        if safe_mode:
            _refuse_unsafe(config, source, custom, "keras" if major >= 3 else "tf_keras")
        if major >= 3:
            import keras

            try:
                return keras.models.load_model(
                    source, compile=False, safe_mode=safe_mode, custom_objects=custom or None
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
            return tf_keras.models.load_model(source, compile=False, custom_objects=custom or None)
        except Exception as exc:
            raise ModelError(f"tf_keras could not load {str(source)!r}: {exc}") from None
    raise InvalidArgument(
        f"cannot load {str(source)!r}: expected a .keras or .h5 file; for a SavedModel "
        "directory, load the model yourself and pass it to RNNModel"
    )


def _keras_zip_config(path: Path) -> Any:
    try:
        with zipfile.ZipFile(path) as archive:
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
    return parse_json(raw, f"{str(path)!r} is not a valid .keras file: its config.json", ModelError)


def _h5_version_and_config(path: Path) -> tuple[int, Any]:
    try:
        import h5py
    except ImportError:
        raise ModelError("loading .h5 files needs h5py: pip install h5py") from None
    try:
        with h5py.File(path, "r") as handle:
            version = handle.attrs.get("keras_version")
            raw = handle.attrs.get("model_config")
    except OSError as exc:
        raise ModelError(f"{str(path)!r} is not a readable HDF5 file ({exc})") from None
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
            if isinstance(config.get("layers"), list):
                yield from _layers(config["layers"])
            for key in _LAYER_KEYS:
                if isinstance(config.get(key), dict):
                    yield from _layers(config[key])


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


def _unsafe_parts(config: Any, custom: dict[str, Any], layers_module: Any) -> list[str]:
    problems = []
    for layer in _layers(config):
        name = str(layer.get("class_name"))
        settings = layer.get("config")
        layer_name = settings.get("name", "?") if isinstance(settings, dict) else "?"
        module = layer.get("module")
        registered = layer.get("registered_name")
        if name == "Lambda":
            problems.append(
                f"Lambda layer {layer_name!r} (its function is code stored in the file)"
            )
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
        import keras

        layers_module: Any = keras.layers
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
        raise UnsafeModel(
            f"{str(path)!r} has {', '.join(dict.fromkeys(problems))}; loading it would run code. "
            "Pass your own classes in custom_objects={...}, or, only for a file you trust, "
            "load_model(path, safe_mode=False)"
        )
