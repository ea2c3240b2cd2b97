"""Hostile inputs: malformed files, absurd sizes and wrong types get the project's own errors,
naming the value and the fix (never a bare traceback, a hang or an unbounded allocation)."""

from __future__ import annotations

import json
import os
import zipfile

import numpy as np
import pytest
import torch
from helpers import fit_profile, make_trace
from torch import nn

from pytest_rnncov import (
    SBC,
    TC,
    Coverage,
    DataFileError,
    GaussianMutator,
    InvalidArgument,
    InvalidInput,
    ModelError,
    Oracle,
    Profile,
    ProfileError,
    RNNCovWarning,
    RNNModel,
    SampleWriter,
    TimeSeriesMutator,
    UnsafeModel,
    load_model,
)
from pytest_rnncov.core.coverage import MAX_KEPT
from pytest_rnncov.core.metrics import make_metric
from pytest_rnncov.files import parse_json, read_bounded
from pytest_rnncov.generation.encoders import WordEncoder
from pytest_rnncov.generation.ga import GAConfig
from pytest_rnncov.reporting.data import CoverageData


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.rnn = nn.GRU(3, 4, batch_first=True)
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        return self.head(self.rnn(x)[0][:, -1])


@pytest.fixture(scope="module")
def torch_model():
    torch.manual_seed(0)
    rnn = RNNModel(Net())
    x = np.random.default_rng(0).normal(size=(40, 6, 3)).astype(np.float32)
    return rnn, Profile().fit(rnn, x), x


# -- files ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "raw, message",
    [
        (b"[" * 100_000 + b"]" * 100_000, "nests JSON too deeply"),
        (b'{"a": NaN}', "NaN is not a number JSON allows"),
        (b"\xff\xfe", "is not UTF-8 text"),
        (b'{"a": ' + b"9" * 5000 + b"}", "holds an integer of thousands of digits"),
        # json keeps the last of a repeated key; another reader may take the first
        (b'{"m": {"rate": 0.2, "rate": 0.9}}', "key 'rate' is given twice in one object"),
    ],
)
def test_json_readers_refuse_malformed_text(raw, message):
    with pytest.raises(DataFileError, match=message):
        parse_json(raw, "the file")


def test_read_bounded_refuses_devices_long_names_and_nul(tmp_path):
    with pytest.raises(DataFileError, match="not a regular file"):
        read_bounded(__import__("pathlib").Path("/dev/zero"), "/dev/zero")
    with pytest.raises(DataFileError, match="cannot read"):
        read_bounded(tmp_path / ("x" * 5000), "a long name")
    big = tmp_path / "big.json"
    big.write_bytes(b" " * 2000)
    with pytest.raises(DataFileError, match="more than the 1,000 read"):
        read_bounded(big, "big", limit=1000)


@pytest.mark.parametrize("path", ["a\x00b.json", "", 3, None, b"x.json"])
def test_bad_paths_are_invalid_arguments(path):
    with pytest.raises(InvalidArgument):
        CoverageData.load(path)
    with pytest.raises(InvalidArgument):
        Profile.load(path)


def _data_file(tmp_path, change):
    rng = np.random.default_rng(0)
    profile = fit_profile(make_trace(h=rng.normal(size=(6, 5, 3)), f=rng.uniform(size=(6, 5, 3))))
    from pytest_rnncov.core.state import ModelState

    metrics = {}
    for name in ("BC", "TC"):
        metric = make_metric(name).bind(profile, track_fitness=False)
        metrics[name] = metric.state_
    state = ModelState("m", "hand", "lstm", profile.window_, "hand", 0, metrics)
    content = CoverageData(models={"m": state}).to_json()
    change(content)
    path = tmp_path / "data.json"
    path.write_text(json.dumps(content))
    return path


def _sample(seed, case):
    """A gallery sample with ``seed`` and ``case`` as written."""
    return {
        "seed_index": 0,
        "distance": 1.0,
        "seed_decision": "0",
        "case_decision": "1",
        "seed": seed,
        "case": case,
        "clip": [],
    }


def _campaign(**changes):
    """A campaign summary as a data file holds it, with ``changes``."""
    from pytest_rnncov.generation.results import CampaignResult

    result = CampaignResult(
        test_cases=9,
        adversarial=1,
        unique=1,
        average_perturbation=0.5,
        distance="L2",
        rates={"BC": 0.5},
        covered={"BC": 1},
        totals={"BC": 2},
        coverage_times={"BC": [1, 0]},
        minimal_suite=[0],
        diversity=None,
        growth=[],
    )
    return {**result.summary("m").to_json(), **changes}


@pytest.mark.parametrize(
    "change, message",
    [
        (
            lambda d: d["models"]["m"]["metrics"]["TC"].update(total=10**12),
            "declares .* conditions in all",
        ),
        (
            lambda d: d["models"]["m"]["metrics"]["TC"].update(covered_ids=[2**70], times=[1]),
            "integers below 2\\*\\*62",
        ),
        (lambda d: d["models"]["m"]["metrics"]["TC"].update(metric="XX"), "not one of"),
        (lambda d: d["models"]["m"].update(cell="transformer"), "cell 'transformer'"),
        (
            lambda d: d["models"]["m"]["metrics"]["TC"].update(config={}),
            "must hold exactly the keys",
        ),
        # fields of the right name but the wrong type, range or count of conditions
        (lambda d: d["models"]["m"]["metrics"]["TC"]["config"].update(a=2**63), "'a' cannot be"),
        (lambda d: d["models"]["m"]["metrics"]["TC"]["config"].update(a=[3]), "'a' cannot be"),
        (
            lambda d: d["models"]["m"]["metrics"]["TC"]["config"].update(a=2),
            "implies 32 conditions",
        ),
        (lambda d: d["models"]["m"]["metrics"]["TC"]["config"].update(w=2**63), "'w' cannot be"),
        (lambda d: d["models"]["m"]["metrics"]["BC"]["config"].update(window=[1]), "'window'"),
        (lambda d: d["models"]["m"]["metrics"]["BC"]["config"].update(component=[]), "'component'"),
        (
            lambda d: d["models"]["m"]["metrics"]["BC"]["config"].update(alpha_max=None),
            "'alpha_max'",
        ),
        (
            lambda d: d["models"]["m"]["metrics"]["BC"]["config"].update(alpha_max=10**400),
            "'alpha_max' cannot be 1000",
        ),
        (lambda d: d["models"]["m"].pop("profile"), "missing key 'profile'"),
        # values the metric itself would refuse, or that disagree with the rest of the file
        (
            lambda d: d["models"]["m"]["metrics"]["BC"]["config"].update(alpha_max=0.9),
            "does not match its fields",
        ),
        (
            lambda d: d["models"]["m"]["metrics"]["BC"]["config"].update(component="r"),
            "does not match its fields \\('BC\\(r/avg",
        ),
        (
            lambda d: (
                d["models"]["m"]["metrics"]["BC"]["config"].update(component="r"),
                d["models"]["m"]["metrics"]["BC"].update(describe="BC(r/avg, alpha_max=0.8)"),
            ),
            "'component' 'r' is not one of the lstm components",
        ),
        (
            lambda d: d["models"]["m"]["metrics"]["TC"]["config"].update(window=[1, 4]),
            "is not the model's",
        ),
        (
            lambda d: d["campaigns"].append(_campaign(test_cases=1, adversarial=5, unique=0)),
            "more adversarial samples than test cases",
        ),
        (
            lambda d: d["campaigns"].append(
                _campaign(gallery=[_sample([1.0, 2.0], [1.0, 2.0, 3.0])])
            ),
            "differ in shape",
        ),
        (
            lambda d: d["campaigns"].append(_campaign(gallery=[_sample([1, 2], [1.0, 2.0])])),
            "'seed' must be an array of floats within float32's range",
        ),
        (  # a model input past float32: the HTML report's plot crashed on it
            lambda d: d["campaigns"].append(_campaign(gallery=[_sample([1.0, 1e300], [1.0, 2.0])])),
            "'seed' must be an array of floats within float32's range",
        ),
        (lambda d: d["campaigns"].append(_campaign(diversity=0.5)), "'diversity' must be"),
        (lambda d: d["campaigns"].append({**_campaign(), "extra": 1}), "unknown key 'extra'"),
        (lambda d: d["signals"].update(m={"steps": [0, 1], "h_net_z": [[1.0]]}), "rows of 2"),
        (  # the HTML report's plot crashed on it
            lambda d: d["signals"].update(m={"steps": [0, 1], "h_net_z": [[1e308, -1e308]]}),
            "numbers within float32's range",
        ),
    ],
)
def test_edited_data_files_are_refused_by_name(tmp_path, change, message):
    path = _data_file(tmp_path, change)
    with pytest.raises(DataFileError, match=message):
        CoverageData.load(path)


def test_an_unedited_data_file_loads(tmp_path):
    assert CoverageData.load(_data_file(tmp_path, lambda d: None)).models["m"].name == "m"


def test_profile_files_with_huge_numbers_are_profile_errors(tmp_path):
    profile = fit_profile(make_trace(h=np.random.default_rng(0).normal(size=(6, 5, 3))))
    content = profile.to_dict()
    content["neurons"]["min"][0][0] = 10**400
    path = tmp_path / "p.json"
    path.write_text(json.dumps(content))
    with pytest.raises(ProfileError, match="neurons.min"):
        Profile.load(path)
    content = profile.to_dict()
    key = next(iter(content["signals"]))
    content["signals"][key]["mean"] = content["signals"][key]["max"] + 1.0
    path.write_text(json.dumps(content))
    with pytest.raises(ProfileError, match="lies outside"):
        Profile.load(path)


def _keras_file(tmp_path, config: dict) -> str:
    path = tmp_path / "model.keras"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("config.json", json.dumps(config))
    return str(path)


def test_layers_from_foreign_modules_are_refused(tmp_path):
    config = {
        "class_name": "Sequential",
        "config": {
            "layers": [{"module": "evil.payload", "class_name": "Dense", "config": {"name": "d"}}]
        },
    }
    with pytest.raises(UnsafeModel, match="from module 'evil.payload'"):
        load_model(_keras_file(tmp_path, config))


@pytest.mark.parametrize(
    ("cell", "said"),
    [
        ({"module": "evil.payload", "class_name": "LSTMCell", "config": {"name": "c"}},
         "layer 'c' from module 'evil.payload'"),
        ({"class_name": "MyCell", "config": {"name": "mine"}}, "custom layer 'mine'"),
    ],
)  # fmt: skip
def test_the_cells_of_stacked_rnn_cells_are_scanned(tmp_path, cell, said):
    stacked = {"class_name": "StackedRNNCells", "config": {"name": "s", "cells": [cell]}}
    config = {
        "class_name": "Sequential",
        "config": {"layers": [{"class_name": "RNN", "config": {"name": "r", "cell": stacked}}]},
    }
    with pytest.raises(UnsafeModel, match=said):
        load_model(_keras_file(tmp_path, config))


def test_keras2_list_configs_and_any_lambda_type_are_scanned(tmp_path):
    config = {
        "class_name": "Sequential",
        "config": [{"class_name": "MyLayer", "config": {"name": "mine"}}],
    }
    with pytest.raises(UnsafeModel, match="custom layer 'mine'"):
        load_model(_keras_file(tmp_path, config))
    config = {
        "class_name": "Sequential",
        "config": {
            "layers": [
                {
                    "class_name": "Dense",
                    "config": {
                        "name": "d",
                        "activation": {"name": "act", "output_shape_type": "lambda"},
                    },
                }
            ]
        },
    }
    with pytest.raises(UnsafeModel, match="serialised Python function 'act'"):
        load_model(_keras_file(tmp_path, config))


def test_a_vocabulary_read_from_a_path_is_refused(tmp_path):
    """A StringLookup whose vocabulary names /etc/passwd read it into the model (/dev/zero
    killed the process): a path in a model file can name any file on the machine."""
    config = {
        "class_name": "Sequential",
        "config": {
            "layers": [
                {"class_name": "StringLookup",
                 "config": {"name": "lookup", "vocabulary": "/etc/passwd"}},
            ]
        },
    }  # fmt: skip
    with pytest.raises(UnsafeModel, match="layer 'lookup' reading its vocabulary from the path"):
        load_model(_keras_file(tmp_path, config))
    with pytest.raises(UnsafeModel, match="Save the model with Keras 3, which keeps a vocab"):
        load_model(_keras_file(tmp_path, config))
    config["config"]["layers"].append({"class_name": "Mine", "config": {"name": "mine"}})
    with pytest.raises(UnsafeModel, match="inside the file; pass your own classes in custom_"):
        load_model(_keras_file(tmp_path, config))


def test_a_fifo_put_in_place_of_a_model_file_is_refused_not_waited_on(tmp_path):
    """The private copy opened the file before checking it: a FIFO put there after
    model_path looked blocked the load until a writer came."""
    from pytest_rnncov.adapters import loading

    os.mkfifo(tmp_path / "m.keras")
    (tmp_path / "d.keras").mkdir()  # a directory: refused by name, its handle closed
    for name in ("m.keras", "d.keras"):
        before = len(os.listdir("/proc/self/fd"))
        with pytest.raises(ModelError, match="is not a regular file"):
            with loading._private_copy(tmp_path / name):
                pass
        assert len(os.listdir("/proc/self/fd")) == before


def test_an_oversized_keras_config_is_refused_unread(tmp_path, monkeypatch):
    from pytest_rnncov.adapters import loading

    monkeypatch.setattr(loading, "MAX_CONFIG", 100)
    path = _keras_file(tmp_path, {"class_name": "Sequential", "config": {"x": "y" * 200}})
    with pytest.raises(ModelError, match="more than the 100"):
        load_model(path)


# -- sizes ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "make",
    [
        lambda: TC(w=10**6),
        lambda: TC(a=10**18),
        lambda: SBC(k=10**9),
        lambda: Profile(state_components=64, state_intervals=10**5),
        lambda: GAConfig(k=4096, n=4096),
        lambda: GAConfig(gamma=10**9),
    ],
)
def test_absurd_sizes_are_refused_at_once(make):
    with pytest.raises(InvalidArgument):
        make()


def test_kept_inputs_are_bounded(monkeypatch):
    from pytest_rnncov.core import coverage as coverage_module

    monkeypatch.setattr(coverage_module, "MAX_KEPT", 3)
    rng = np.random.default_rng(0)
    profile = fit_profile(make_trace(h=rng.normal(size=(6, 9, 3)), f=rng.uniform(size=(6, 9, 3))))

    class Source:  # a TraceSource over hand-made traces
        name, layer_name, units, cell_kind, n_steps = "hand", "hand", 3, "lstm", 9

        def fingerprint(self):
            return "hand"

        def check_input(self, x):
            return np.asarray(x)

        def iter_traces(self, x, *, outputs=True, until=None, components=None):
            yield None, make_trace(h=x, f=x)

    coverage = Coverage(Source(), profile, ["BC", "SC", "TC"])
    coverage.update(rng.normal(size=(50, 9, 3)).astype(np.float32))
    assert 0 < len(coverage._kept) <= 3
    assert MAX_KEPT == 4096


# -- arguments -----------------------------------------------------------------------------
def test_not_a_model_is_named(torch_model):
    _, profile, x = torch_model
    with pytest.raises(InvalidArgument, match="is not a traceable model.*RNNModel"):
        Profile().fit("model.keras", x)
    with pytest.raises(InvalidArgument, match="is not a traceable model"):
        Coverage(object(), profile)


def test_update_trace_and_fit_traces_check_their_arguments(torch_model):
    rnn, profile, x = torch_model
    coverage = Coverage(rnn, profile)
    with pytest.raises(InvalidArgument, match="pass a Trace"):
        coverage.update_trace(x)
    with pytest.raises(InvalidArgument, match="inputs has 3 rows but the trace 5"):
        coverage.update_trace(rnn.trace(x[:5]), x[:3])
    with pytest.raises(InvalidArgument, match="not Trace"):
        Profile().fit_traces([x], layer="l", fingerprint="f")
    with pytest.raises(InvalidArgument, match="condition=99"):
        coverage["BC"].label(99)


def test_campaign_targets_and_listeners_are_checked(torch_model):
    from pytest_rnncov import Campaign

    rnn, profile, x = torch_model
    mutator = GaussianMutator(0.01, clip=None)
    with pytest.raises(InvalidArgument, match="name at least one tracked metric"):
        Campaign(rnn, x[:4], mutator, Oracle(), profile=profile, targets=[])
    with pytest.raises(InvalidArgument, match="has none of on_adversarial, on_shrunk, on_finish"):
        Campaign(rnn, x[:4], mutator, Oracle(), profile=profile, listeners=[object()])
    # a class passed the check, then failed at its first sample with a bare TypeError
    with pytest.raises(InvalidArgument, match=r"SampleWriter is a class; pass an instance, e"):
        Campaign(rnn, x[:4], mutator, Oracle(), profile=profile, listeners=[SampleWriter])
    with pytest.raises(InvalidArgument, match=r"e.g. listeners=\[<pytest_rnncov"):
        Campaign(rnn, x[:4], mutator, Oracle(), profile=profile, listeners=SampleWriter("o"))
    # a tracked model's campaign() passed its listeners to list(): a bare TypeError
    from pytest_rnncov.plugin.session import RNNCovSession

    tracked = RNNCovSession().track(rnn, profile=profile, name="m")
    for bad in (None, SampleWriter("o")):
        with pytest.raises(InvalidArgument, match=r"listeners=.*; pass a list of objects"):
            tracked.campaign(x[:4], mutator, Oracle(), listeners=bad)


def test_mutator_and_oracle_arguments():
    assert GaussianMutator(np.array(0.01)).variance == (0.01, 0.01)
    nan_rows = np.zeros((3, 4, 2), np.float32)
    nan_rows[1, 2, 0] = np.nan
    for mutator in (GaussianMutator(0.01), TimeSeriesMutator()):  # NaN went through as mutant
        with pytest.raises(InvalidInput, match=r"cases hold NaN or inf in rows \[1\]; \w+Mut"):
            mutator.mutate(nan_rows, np.random.default_rng(0))
    ragged = np.empty(2, object)  # as np.array([...], dtype=object) makes ragged rows
    ragged[:] = [np.zeros((5, 2)), np.zeros((3, 2))]
    with pytest.raises(InvalidInput, match=r"seeds: its rows have different lengths \(3 to 5\)"):
        GaussianMutator().check_seeds(ragged)  # was "seeds have shape (2,)"
    stacked = np.empty(2, object)
    stacked[:] = [np.zeros((5, 2)), np.ones((5, 2))]
    with pytest.raises(InvalidInput, match=r"an object array of 2 rows of one length; .*np.stack"):
        GaussianMutator().check_seeds(stacked)  # was "... (seeds[None] for one)"
    with pytest.raises(InvalidInput, match=r"seeds: its rows have different lengths"):
        TimeSeriesMutator.from_seeds(ragged)  # was "seeds have dtype object; pass numbers"
    with pytest.raises(InvalidInput, match="seed outputs must be numeric model outputs"):
        Oracle().margin([[None, None]], [[1, 0]])  # read as NaN
    with pytest.raises(InvalidInput, match="numeric seeds"):
        GaussianMutator.from_seeds([["a", "b"], ["c", "d"]])
    with pytest.raises(InvalidArgument, match="applies to task='regression'"):
        Oracle(tolerance=0.5)
    oracle = Oracle(1.0)
    with pytest.raises(InvalidInput, match="numeric model outputs"):
        oracle.check("cat", "dog", 0.1)
    with pytest.raises(InvalidInput, match="check\\(\\) judges one case"):
        oracle.check(np.eye(3)[:2], np.eye(3)[:2], 0.1)
    with pytest.raises(InvalidInput, match="2 values for 3 cases"):
        oracle.fails(np.eye(3), np.eye(3), [0.1, 0.2])
    # a 1-D output vector is one case's outputs, not a batch of scalars
    with pytest.raises(AssertionError, match="decision changed from 0 to 2"):
        oracle.check(np.array([0.9, 0.05, 0.05]), np.array([0.1, 0.2, 0.7]), 0.5)
    with pytest.raises(InvalidInput, match="distance=f"):
        Oracle.calibrate(np.array([["a"], ["b"]]), np.eye(2))
    with pytest.raises(InvalidInput, match="NaN, inf or negative"):
        Oracle.calibrate(np.eye(2), np.eye(2), distance=lambda a, b: -np.ones(len(a)))
    big = np.array([[1e200], [-1e200]])  # the Gram matrix would overflow unscaled
    assert Oracle.calibrate(big, np.eye(2), quantile=0.0).radius == pytest.approx(1e200)


def test_word_encoder_vocabulary():
    encoder = WordEncoder(["Good", "bad"], length=3)
    assert encoder(["good BAD"]).tolist() == [[0, 2, 3]]
    with pytest.raises(InvalidArgument, match="not one word"):
        WordEncoder(["very good"], length=3)
    with pytest.raises(InvalidArgument, match="list of texts"):
        WordEncoder.fit("one text")


def test_torch_input_shape_and_dtype(torch_model):
    with pytest.raises(InvalidArgument, match="input_shape="):
        RNNModel(Net(), input_shape=(0, 3))
    rnn = RNNModel(Net())
    with pytest.raises(InvalidInput):
        rnn.check_input(np.full((2, 6, 3), np.nan, np.float32))
    # the refused batch did not fix the input shape: a batch of another length still works
    assert rnn.check_input(np.zeros((2, 5, 3), np.float32)).shape == (2, 5, 3)
    assert rnn.input_dtype == np.float32
    for trace_on in ("numpy", "device"):  # the device path checks later batches in its pass
        rnn = RNNModel(Net(), trace_on=trace_on)
        with pytest.raises(InvalidInput, match=r"NaN or inf in rows \[0, 1\]"):
            rnn.trace(np.full((2, 6, 3), np.nan, np.float32))
        assert rnn.trace(np.zeros((2, 5, 3), np.float32)).h.shape == (2, 5, 4)


@pytest.mark.parametrize("trace_on", ["numpy", "device"])
def test_a_torch_models_input_shape_is_fixed_by_a_call_that_went_through(trace_on):
    """A first batch the model fails on, or the caller refuses (a trace of other steps
    than the profile's), fixes nothing; the first call that goes through fixes the shape."""
    x = np.random.default_rng(0).normal(size=(6, 7, 3)).astype(np.float32)
    model = Net()
    rnn = RNNModel(model, trace_on=trace_on)
    with pytest.raises(ModelError):  # 4 features where the GRU reads 3
        rnn.trace(np.zeros((2, 7, 4), np.float32))
    assert rnn.input_shape == ()
    profile = Profile(window=(1, 5)).fit(rnn, x)
    coverage = Coverage(RNNModel(model, trace_on=trace_on), profile)
    with pytest.raises(InvalidInput, match="trace of 6 steps but the profile"):
        coverage.update(x[:, :6])
    assert coverage.n_inputs_ == 0 and coverage.update(x) and coverage.n_inputs_ == 6
    with pytest.raises(InvalidInput, match=r"expects \(batch, 7, 3\)"):  # fixed now
        coverage.update(x[:, :6])


class Returns(Net):
    """A model whose output is ``kind``: not one prediction per input."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind

    def forward(self, x):
        out = super().forward(x)
        return {"dict": {"y": out}, "scalar": out.sum(), "one row": out[:1]}[self.kind]


def test_a_generator_of_inputs_is_named_as_such(stacked_model, seq_inputs):
    """A generator (or a dict) was refused as "inputs have shape ()" (PyTorch) or "dtype
    object ... encode text first" (Keras): the wrong fix."""
    for rnn in (RNNModel(Net()), RNNModel(stacked_model, "lstm_b")):
        for given, kind in (((row for row in seq_inputs), "generator"), ({"x": 1}, "dict")):
            with pytest.raises(InvalidInput, match=f"inputs are a {kind}, not an array; pass"):
                rnn.predict(given)


def test_sequences_of_different_lengths_are_told_to_be_padded(stacked_model, seq_inputs):
    """A list of unpadded series met numpy's "setting an array element with a sequence.
    The requested array has an inhomogeneous shape", which names no fix."""
    rows = [seq_inputs[0, :3], seq_inputs[1], seq_inputs[2, :5]]
    for rnn in (RNNModel(Net()), RNNModel(stacked_model, "lstm_b")):
        with pytest.raises(
            InvalidInput, match=r"rows have different lengths \(3 to 7\); pad them to one length"
        ):
            rnn.predict(rows)


@pytest.mark.parametrize("trace_on", ["numpy", "device"])
def test_torch_inputs_and_outputs_that_cannot_be_read_are_refused(trace_on):
    x = np.random.default_rng(0).normal(size=(5, 6, 3)).astype(np.float32)
    rnn = RNNModel(Net(), trace_on=trace_on)
    with pytest.raises(InvalidInput, match="cannot be read as an array"):
        rnn.trace([[[1.0, 2.0, 3.0]], [[1.0, 2.0]]])  # ragged
    with pytest.raises(InvalidInput, match=r"\(2, 0, 3\): each input holds no values"):
        rnn.predict(np.zeros((2, 0, 3), np.float32))
    bf16 = rnn.run(torch.from_numpy(x).to(torch.bfloat16))[0]  # numpy has no bfloat16
    np.testing.assert_allclose(bf16, rnn.predict(x), atol=0.05)
    for kind, message in [
        ("dict", "returns a dict where"),
        ("scalar", "returns a 0-d tensor"),
        ("one row", r"outputs of shape \(1, 2\) for a batch of 5 inputs"),
    ]:
        model = RNNModel(Returns(kind), trace_on=trace_on)
        for call in (model.predict, model.run):
            with pytest.raises(ModelError, match=message):
                call(x)


@pytest.mark.parametrize("trace_on", ["numpy", "device"])
def test_a_time_major_model_is_refused_not_split_along_its_steps(trace_on):
    """A model taking (steps, batch, features): its inputs' axis 0 is not the batch."""

    class TimeMajor(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.rnn = nn.LSTM(3, 4)

        def forward(self, x):
            return self.rnn(x)[0][-1]

    steps_first = np.random.default_rng(0).normal(size=(8, 5, 3)).astype(np.float32)
    for batch_size in (3, None):
        rnn = RNNModel(TimeMajor(), batch_size=batch_size, trace_on=trace_on)
        for call in (rnn.trace, rnn.run):
            with pytest.raises(ModelError, match="ran on a batch of 5 sequences for [38] inp"):
                call(steps_first)
        with pytest.raises(ModelError, match=r"outputs of shape \(5, 4\) for a batch of"):
            rnn.predict(steps_first)
        assert rnn.input_shape == ()  # nothing went through: nothing fixed


@pytest.mark.parametrize("trace_on", ["numpy", "device"])
@pytest.mark.parametrize("layers, layer", [(1, None), (2, "rnn.l0"), (2, "rnn.l1")])
def test_a_time_major_model_fed_as_many_inputs_as_steps_is_refused(trace_on, layers, layer):
    """5 inputs of 5 steps reach a batch_first=False module as 5 sequences of 5 steps
    either way: one pass on one input more tells the layouts apart (it traced wrong
    before); a stacked module's split pass keeps its own values through it."""

    class Layout(nn.Module):
        def __init__(self, time_major: bool) -> None:
            super().__init__()
            self.time_major = time_major
            self.rnn = nn.LSTM(3, 4, num_layers=layers)

        def forward(self, x):
            x = x if self.time_major else x.transpose(0, 1)
            return self.rnn(x)[0][-1]

    square = np.random.default_rng(0).normal(size=(5, 5, 3)).astype(np.float32)
    torch.manual_seed(0)
    with pytest.raises(
        ModelError,
        match=r"ran on a batch of 5 sequences for 6 inputs \(the 5 given and a copy of the first",
    ):
        RNNModel(Layout(time_major=True), layer, trace_on=trace_on).trace(square)
    model = Layout(time_major=False)
    calls = []
    model.rnn.register_forward_pre_hook(lambda module, args: calls.append(len(args[0][0])))
    rnn = RNNModel(model, layer, trace_on=trace_on)
    traced = rnn.trace(square)
    rnn.trace(square)
    assert calls.count(6) == 1 and calls[:2] == [5, 6]  # one probe, not one per call
    # what 10 inputs (no probe: the shapes tell) give for the same 5
    unambiguous = RNNModel(model, layer, trace_on=trace_on).trace(np.concatenate([square, square]))
    for name in ("h", "c", "f"):
        np.testing.assert_allclose(
            np.asarray(getattr(traced, name)),
            np.asarray(getattr(unambiguous, name))[:5],
            atol=1e-6,
        )


def test_token_ids_of_a_model_with_several_embeddings():
    """Ids are checked against the widest embedding (a positional one may come first);
    an id beyond the one that reads it fails in the model, as the project's ModelError."""

    class TwoEmbeddings(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.position, self.token = nn.Embedding(6, 5), nn.Embedding(100, 5)
            self.rnn = nn.GRU(5, 4, batch_first=True)

        def forward(self, ids):
            return self.rnn(self.token(ids) + self.position(torch.arange(ids.shape[1])))[0][:, -1]

    rnn = RNNModel(TwoEmbeddings())
    assert rnn.trace(np.array([[50, 60, 70, 80, 90, 99]])).h.shape == (1, 6, 4)
    with pytest.raises(InvalidInput, match=r"token ids must lie in \[0, 100\)"):
        rnn.trace(np.array([[1, 2, 3, 4, 5, 100]]))


def test_a_module_named_like_a_stacked_layer_is_found_by_its_name():
    class Encoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.l1 = nn.LSTM(3, 4, batch_first=True, num_layers=2)

    class Nested(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.enc = Encoder()

        def forward(self, x):
            return self.enc.l1(x)[0][:, -1]

    model = Nested()
    for layer, depth in [("enc.l1", 0), ("enc.l1.l0", 0), ("enc.l1.l1", 1)]:
        rnn = RNNModel(model, layer)
        assert (rnn.module_name, rnn.depth, rnn.layer_name) == ("enc.l1", depth, f"enc.l1.l{depth}")
        assert RNNModel(model, rnn.layer_name).depth == depth  # the name round-trips


def test_a_model_writing_to_its_input_in_place_leaves_the_callers_array_alone():
    class InPlace(Net):
        def __init__(self) -> None:
            super().__init__()
            self.act = nn.ReLU(inplace=True)

        def forward(self, x):
            return super().forward(self.act(x))

    x = np.random.default_rng(0).normal(size=(4, 6, 3)).astype(np.float32)
    given = x.copy()
    rnn = RNNModel(InPlace())
    for call in (rnn.predict, rnn.trace, rnn.run):
        call(given)
        np.testing.assert_array_equal(given, x)


def test_a_float16_model_refuses_inputs_beyond_float16():
    """Within float32's range but not float16's: the model would compute with inf."""
    model = Net().half()
    x = np.random.default_rng(0).normal(size=(4, 6, 3)).astype(np.float32)
    x[2, 1, 0] = 1e5
    for trace_on in ("numpy", "device"):
        with pytest.warns(RNNCovWarning, match="float16"):
            rnn = RNNModel(model, trace_on=trace_on)
        for call in (rnn.predict, rnn.trace):
            with pytest.raises(InvalidInput, match=r"beyond float16's range .* rows \[2\]"):
                call(x)
        assert np.isfinite(rnn.predict(x[:2])).all()


def test_a_later_batch_that_fails_says_what_coverage_kept():
    class Picky(Net):
        def forward(self, x):
            if (x > 50).any():
                raise ValueError("bad row")
            return super().forward(x)

    x = np.random.default_rng(0).normal(size=(8, 6, 3)).astype(np.float32)
    rnn = RNNModel(Picky(), batch_size=4)
    coverage = Coverage(rnn, Profile(window=(0, 5)).fit(rnn, x))
    late, early = x.copy(), x.copy()
    late[7], early[2] = 99, 99
    with pytest.raises(ModelError, match=r"bad row \(this coverage kept the first 4 of these 8"):
        coverage.update(late)
    assert coverage.n_inputs_ == 4
    with pytest.raises(ModelError, match=r"bad row$"):  # nothing kept: nothing said
        coverage.update(early)
    assert coverage.n_inputs_ == 4


def test_numpy_integers_are_accepted_as_layer_indices(torch_model):
    assert RNNModel(Net(), np.int64(0)).layer_name == RNNModel(Net(), 0).layer_name


def test_save_to_an_unwritable_path_is_a_data_file_error(tmp_path):
    with pytest.raises(DataFileError, match="cannot write"):
        CoverageData().save(tmp_path / ("x" * 5000))
    if os.geteuid() != 0:
        os.chmod(tmp_path, 0o500)
        with pytest.raises(DataFileError):
            CoverageData().save(tmp_path / "data.json")


def test_updates_leave_no_reference_cycles(torch_model):
    """Every batch's trace is freed when the batch is done (by reference counting, not by
    the cyclic collector, which may run too rarely to keep memory flat)."""
    import gc

    from pytest_rnncov.core.metrics import Signals
    from pytest_rnncov.core.trace import Trace

    rnn, profile, x = torch_model
    coverage = Coverage(rnn, profile, ["BC", "SC", "TC", "NC", "KMNC"])
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        coverage.update(x)
        gc.collect()
        cyclic = [type(o).__name__ for o in gc.garbage if isinstance(o, (Trace, Signals))]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    assert cyclic == []


def _varied_profile(scale=1.0):
    """A profile with a state model (hidden states vary in every direction)."""
    rng = np.random.default_rng(1)
    return fit_profile(
        make_trace(h=scale * rng.normal(size=(40, 5, 3)), f=rng.uniform(size=(40, 5, 3)))
    )


def test_profile_state_ids_beyond_int64_are_refused(tmp_path):
    profile = _varied_profile()
    assert profile.states_ is not None
    data = profile.to_dict()
    data["states"]["cells"][0] = 2**63
    path = tmp_path / "p.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ProfileError, match="'cells' holds ids outside"):
        Profile.load(path)


def _state(profile, metrics=("BC", "TC")):
    from pytest_rnncov.core.state import ModelState

    bound = {name: make_metric(name).bind(profile, track_fitness=False) for name in metrics}
    return ModelState(
        "m",
        "hand",
        "lstm",
        profile.window_,
        "hand",
        0,
        {name: m.state_ for name, m in bound.items()},
        profile.digest(),
    )


def test_coverage_from_different_profiles_does_not_combine():
    """Same layer, window and weights, other training data: TC's symbols mean other things."""
    one, other = _state(_varied_profile()), _state(_varied_profile(scale=5.0))
    assert one.profile != other.profile
    with pytest.raises(InvalidArgument, match="they differ in profile "):
        one.copy().merge(other)
    one.copy().merge(_state(_varied_profile()))  # the same profile fitted again: equal digest


def test_configurations_are_compared_to_the_last_digit():
    from pytest_rnncov import BC

    profile = _varied_profile()
    close, exact = BC(alpha_max=0.8000001).bind(profile), BC(alpha_max=0.8).bind(profile)
    assert close.describe() == exact.describe()  # the words round ...
    assert not close.state_.same_configuration(exact.state_)  # ... the comparison does not
    with pytest.raises(InvalidArgument, match="configurations differ"):
        close.state_.copy().merge(exact.state_)


def test_a_mutator_that_overflows_is_named(torch_model):
    """A mutator whose mutants leave float32's range (here a float64 one) is named."""
    from pytest_rnncov import Campaign

    class Float64Noise(GaussianMutator):
        def mutate(self, cases, rng):
            return np.asarray(cases, np.float64) * 1e300

    rnn, profile, x = torch_model
    wild = Float64Noise(variance=1.0, clip=None)
    campaign = Campaign(rnn, x[:4], wild, Oracle(), profile=profile, budget=8, batch_size=4)
    with pytest.raises(InvalidArgument, match="Float64Noise.mutate produced NaN, inf .* variance"):
        campaign.run()


def test_shrinking_integer_cases_moves_them_toward_their_seed():
    """uint8 seed 10, case 5 (fails: the decision flips at <= 5 and at >= 100). The step
    toward the seed was computed in uint8, where 5 - 10 wraps to 251: bisection walked
    away from the seed and kept 100 (distance 90) as "shrunk". Now the case stays at the
    only failing value between them, 5."""
    from pytest_rnncov import Mutator
    from pytest_rnncov.generation.shrinking import shrink

    class Same(Mutator):
        def mutate(self, cases, rng):
            return cases

    def predict(x):
        v = np.asarray(x, np.float64).reshape(len(x), -1)[:, 0]
        flip = (v <= 5) | (v >= 100)
        return np.stack([~flip, flip], 1).astype(np.float32)

    seeds, cases = np.array([[[10]]], np.uint8), np.array([[[5]]], np.uint8)
    out = shrink(Same(), Oracle(), predict, seeds, predict(seeds), cases, predict(cases))
    assert out.cases.dtype == np.uint8 and out.cases.ravel().tolist() == [5]
    assert out.distances.tolist() == [5.0]


def test_a_huge_radius_moves_nothing_and_warns_nothing():
    """radius / norm overflowed float64 for rows inside a radius of 1e308 (a numpy
    RuntimeWarning, an error under -W error); only rows outside are divided now. Hand-
    checked: a row at distance 2 from its seed, radius 1, lands at distance 1."""
    import warnings

    from pytest_rnncov.generation.mutators import within_l2

    seeds = np.zeros((2, 3, 1), np.float32)
    cases = np.array([[[1e-5], [0], [0]], [[0], [2.0], [0]]], np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(within_l2(seeds, cases, 1e308), cases)
        moved = within_l2(seeds, cases, 1.0)
    np.testing.assert_array_equal(moved[0], cases[0])
    assert moved[1].ravel().tolist() == [0.0, 1.0, 0.0]


def test_a_campaign_runs_once_and_its_result_keeps_its_growth(torch_model):
    """A second run() re-evaluated the seeds (counted again), and an interrupted
    campaign's second run still said interrupted: it is refused now. A result from
    finish() mid-run kept the campaign's own growth list, which grew after it (resuming
    the steps after finish() is refused now: what they found reached no result)."""
    from pytest_rnncov import Campaign

    rnn, profile, x = torch_model

    def campaign():
        mutator = GaussianMutator(0.05, clip=None)
        return Campaign(
            rnn, x[:8], mutator, Oracle(radius=1.0), profile=profile, budget=60, batch_size=10
        )

    ran = campaign()
    result = ran.run()
    for again in (ran.run, ran.iterate):
        with pytest.raises(InvalidArgument, match="a campaign runs once"):
            again()
    assert ran.result is result and not result.interrupted and ran.generated == 60

    steps = campaign()
    it = steps.iterate()
    for _ in range(3):
        next(it)
    early = steps.finish()
    points = [dict(point) for point in early.growth]
    with pytest.raises(InvalidArgument, match=r"this campaign was finished \(finish\(\) ran\)"):
        next(it)
    assert early.growth == points == steps.growth
    with pytest.raises(InvalidArgument, match=r"batch_size=65537 must be an integer <= 65536"):
        Campaign(rnn, x[:4], GaussianMutator(), Oracle(), profile=profile, batch_size=65537)


def test_gaussian_noise_beyond_the_cases_dtype_is_refused_by_name():
    """A direct caller gets an error, not inf: noise of standard deviation 1e5 takes
    float16 zeros (largest finite 65504) out of range; float32 holds them."""
    wild = GaussianMutator(variance=1e10, clip=None)
    with pytest.raises(
        InvalidArgument, match=r"variance up to 1e\+10 took \d+ values beyond float16"
    ):
        wild.mutate(np.zeros((4, 8), np.float16), np.random.default_rng(0))
    wide = wild.mutate(np.zeros((4, 8), np.float32), np.random.default_rng(0))
    assert wide.dtype == np.float32 and np.isfinite(wide).all()
    clipped = GaussianMutator(variance=1e10, clip=(-1.0, 1.0))
    assert np.abs(clipped.mutate(np.zeros((4, 8), np.float16), np.random.default_rng(0))).max() == 1


def test_public_mutator_methods_check_their_arguments():
    from pytest_rnncov import CharEncoder, EDAMutator, WordEncoder

    x = np.zeros((3, 4, 2), np.float32)
    with pytest.raises(InvalidInput, match=r"seeds of shape \(2, 4, 2\) and cases of shape"):
        GaussianMutator().distance(x[:2], x)
    with pytest.raises(InvalidInput, match="2 seeds and 1 cases"):
        EDAMutator().distance(["a b", "c"], ["a"])
    for rng in (None, 3):
        with pytest.raises(InvalidArgument, match="is not a numpy.random.Generator"):
            GaussianMutator().mutate(x, rng)
    with pytest.raises(InvalidArgument, match="length"):
        WordEncoder(["a"], length=10**10)
    with pytest.raises(InvalidArgument, match="length"):
        CharEncoder("ab", length=10**10)


def test_coverage_flags_are_booleans(torch_model):
    rnn, profile, _ = torch_model
    with pytest.raises(InvalidArgument, match="track_fitness='no'"):
        Coverage(rnn, profile, track_fitness="no")


def test_a_bar_too_small_to_tell_from_zero_is_refused():
    from pytest_rnncov.config.bars import Bars

    with pytest.raises(InvalidArgument, match="too small to tell from 0"):
        Bars.parse("1e-400")
    assert Bars.parse("0").single == 0.0


def _neuron_data_file(tmp_path, change):
    """A data file holding NBC, SNAC and KMNC, edited by ``change``."""
    from pytest_rnncov.core.state import ModelState

    profile = _varied_profile()
    metrics = {
        name: make_metric(name).bind(profile, track_fitness=False).state_
        for name in ("NBC", "SNAC", "KMNC")
    }
    state = ModelState("m", "hand", "lstm", profile.window_, "hand", 0, metrics, profile.digest())
    content = CoverageData(models={"m": state}).to_json()
    change(content["models"]["m"]["metrics"])
    path = tmp_path / "data.json"
    path.write_text(json.dumps(content))
    return path


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda m: m["NBC"]["config"].update(lower=5.0, upper=-5.0), "must be below"),
        (lambda m: m["SNAC"]["config"].update(lower=0.3), "SNAC has no lower bound"),
        (lambda m: m["SNAC"]["config"].update(sides=["lower", "upper"]), "'sides' of SNAC"),
        (
            lambda m: m["KMNC"]["config"].update(active=[0] * len(m["KMNC"]["config"]["active"])),
            "distinct neurons",
        ),
    ],
)
def test_neuron_metric_configurations_are_checked(tmp_path, change, message):
    with pytest.raises(DataFileError, match=message):
        CoverageData.load(_neuron_data_file(tmp_path, change))
    CoverageData.load(_neuron_data_file(tmp_path, lambda m: None))  # unedited: fine


def test_profile_state_values_beyond_float32_are_refused(tmp_path):
    data = _varied_profile().to_dict()
    data["states"]["mean"][0] = 1e308
    path = tmp_path / "p.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ProfileError, match="within float32's range"):
        Profile.load(path)


def test_states_far_outside_the_grid_fall_outside():
    import warnings

    states = _varied_profile().states_
    far = np.full((2, states.components.shape[0]), 1e30)
    far[1] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "invalid value encountered in cast"
        assert (states.cells_of_projection(far) == -1).all()


def test_gaussian_mutator_methods_refuse_what_they_cannot_measure():
    mutator = GaussianMutator()
    x = np.zeros((2, 3), np.float32)
    for seeds, cases in (
        (["ab", "cd"], ["ab", "cd"]),
        (np.float32(1), np.float32(2)),
        (x, np.full_like(x, np.nan)),
    ):
        with pytest.raises(InvalidInput):
            mutator.distance(seeds, cases)
    with pytest.raises(InvalidInput, match="needs numbers"):
        mutator.mutate(np.array(["ab"]), np.random.default_rng(0))
    with pytest.raises(InvalidInput, match="of one shape|same row"):
        mutator.within(x, x[:1], 1.0)
    for radius in (float("nan"), -1.0):
        with pytest.raises(InvalidArgument, match="radius"):
            mutator.within(x, x, radius)


def test_integers_beyond_float_range_are_refused_by_name():
    """float(10**400) raises OverflowError; every number check turns it into a named error."""
    from pytest_rnncov import BC

    with pytest.raises(InvalidArgument, match="radius=inf must be a finite number"):
        Oracle(radius=10**400)
    with pytest.raises(InvalidArgument, match="alpha_max=inf must be a number in"):
        BC(alpha_max=10**400)


# -- the core on unusual but legal traces (a hostile pass) ---------------------------------
def _typed_trace(h, dtype):
    """An LSTM trace whose components are ``h`` (f at 0.5) in ``dtype``."""
    from pytest_rnncov import Trace

    h = np.asarray(h, dtype)
    zeros = np.zeros(h.shape, dtype)
    return Trace(
        {"f": np.full(h.shape, 0.5, dtype), "i": zeros, "o": zeros, "c": zeros, "h": h}, cell="lstm"
    )


def _bound(metric, profile, trace):
    from pytest_rnncov.core.metrics import Signals

    bound = metric.bind(profile)
    bound.update(Signals(trace, profile.window_), np.arange(len(trace)))
    return bound


@pytest.mark.parametrize(
    ("dtype", "value", "metric", "covered"),
    [  # hand-checked: NC covers h > 0; NBC's lower side h < LB (its default LB: -0.7)
        (np.float64, 1e-50, "NC", True),  # float32 thresholds: 1e-50 rounded to 0, missed
        (np.float16, 0.0, "NC", False),  # 0 compared as above 0's float32 neighbour
        (np.float64, -0.7, "NBC", False),  # at LB exactly: not below it (float32: below)
        (np.float16, -0.7001953125, "NBC", True),  # float16 just below LB (was missed)
    ],
)
def test_neuron_metrics_on_float64_and_float16_traces(dtype, value, metric, covered):
    """NC, NBC and SNAC compared every trace with thresholds rounded for float32: a float64
    or float16 value could count the other way round from its fitness (fitness <= 0
    exactly when covered, docs/definitions.md)."""
    from pytest_rnncov import NBC, NC

    profile = fit_profile(make_trace(h=np.random.default_rng(0).normal(size=(3, 2, 1))))
    trace = _typed_trace(np.full((1, 2, 1), value), dtype)
    assert float(trace.h[0, 0, 0]) == value  # exact in the dtype
    bound = _bound(NC() if metric == "NC" else NBC(), profile, trace)
    assert bool(bound.covered_[0]) is covered
    assert bool(bound.best_fitness_[0] <= 0) is covered


def test_traces_of_another_layer_and_empty_ones_are_refused_or_add_nothing():
    """A trace of 2 units against a profile of 3 was normalised with the other's statistics
    (BC/SC/TC) or a bare numpy error; a batch of no rows crashed BC, SC and the neuron
    metrics; a trace of no steps or units was a bare error or blamed NaN."""
    from pytest_rnncov import Coverage, Trace

    rng = np.random.default_rng(0)
    profile = fit_profile(make_trace(h=rng.normal(size=(6, 4, 3)), f=rng.uniform(size=(6, 4, 3))))

    class Hand(_Hand):
        units, n_steps = 3, 4

    coverage = Coverage(Hand(), profile, ["BC", "SC", "TC", "NC", "KMNC", "NBC"])
    narrow = make_trace(h=rng.normal(size=(2, 4, 2)), f=rng.uniform(size=(2, 4, 2)))
    with pytest.raises(InvalidInput, match="lstm layer of 2 units but the profile .* of 3"):
        coverage.update_trace(narrow)
    assert coverage.update_trace(make_trace(shape=(0, 4, 3))) == dict.fromkeys(coverage.metrics, 0)
    assert coverage.n_inputs_ == 0
    with pytest.raises(InvalidArgument, match="training traces of a lstm layer of 3 units and"):
        fit_profile(make_trace(h=rng.normal(size=(2, 4, 3))), narrow)
    for shape in [(2, 0, 2), (2, 3, 0)]:
        with pytest.raises(InvalidArgument, match="no steps or no units"):
            Trace({"h": np.zeros(shape, np.float32)}, cell="gru")


class _Hand:
    """A trace source for hand-made traces of an LSTM layer of 2 units and 3 steps."""

    name = layer_name = "hand"
    units, cell_kind, n_steps = 2, "lstm", 3

    def fingerprint(self):
        return "hand"

    def check_input(self, x):
        return np.asarray(x)

    def iter_traces(self, x, *, outputs=True, until=None, components=None):
        raise AssertionError("hand-made traces go through update_trace")


def test_merging_counts_each_input_once():
    """Data made in code has no run ids: merged with itself or a copy it counted twice;
    a shallow copy of a Coverage shared its metrics' state; a metric merged into itself
    doubled; one bound to another profile merged under this one's thresholds."""
    import copy

    from pytest_rnncov import BC, Coverage
    from pytest_rnncov.reporting.data import CoverageData, combine

    rng = np.random.default_rng(0)
    profile = fit_profile(make_trace(h=rng.normal(size=(6, 3, 2)), f=rng.uniform(size=(6, 3, 2))))
    trace = make_trace(h=rng.normal(size=(3, 3, 2)), f=rng.uniform(size=(3, 3, 2)))
    coverage = Coverage(_Hand(), profile, ["BC"])
    coverage.update_trace(trace)
    data = CoverageData(models={"m": coverage.state("m")})
    with pytest.raises(DataFileError, match="merged into itself"):
        data.merge(data)
    with pytest.raises(DataFileError, match="holds run content-"):
        data.merge(CoverageData.loads(data.dumps()))
    with pytest.raises(DataFileError, match="holds run content-"):
        combine([data, data])
    assert data.models["m"].n_inputs == 3
    metric = coverage["BC"]
    with pytest.raises(InvalidArgument, match="into itself"):
        metric.merge(metric)
    with pytest.raises(InvalidArgument, match="copy.copy of a bound BC would share its state"):
        copy.copy(metric)  # a shallow copy would share the state
    other = fit_profile(
        make_trace(h=rng.normal(size=(6, 3, 2)), f=rng.uniform(0.9, 1, size=(6, 3, 2)))
    )
    with pytest.raises(InvalidArgument, match="bound to another profile"):
        metric.merge(_bound(BC(), other, trace))
    with pytest.raises(InvalidArgument, match="copy.copy.*deepcopy"):
        copy.copy(coverage)
    # pickled copies, as sent to worker processes: an empty one merges back, a fed one not
    import pickle

    empty = Coverage(_Hand(), profile, ["BC"])
    shards = [pickle.loads(pickle.dumps(empty)) for _ in range(2)]
    for shard in shards:
        shard.update_trace(trace)
    shards[0].merge(shards[1])
    assert shards[0].n_inputs_ == 6
    with pytest.raises(InvalidArgument, match="would count twice"):
        coverage.merge(pickle.loads(pickle.dumps(coverage)))


def test_a_pca_direction_of_rounding_noise_is_no_direction():
    """Two identical units: the second direction's variance is rounding noise, yet its
    range (about 1e-17) was cut into intervals, inventing BS conditions."""
    from pytest_rnncov import BS

    x = np.random.default_rng(0).uniform(-1, 1, size=(20, 4, 1))
    h = np.concatenate([x, x], axis=2)
    with pytest.warns(RNNCovWarning, match="rounding noise"):
        profile = Profile(state_components=2, state_intervals=4).fit_traces(
            [make_trace(h=h)], layer="hand", fingerprint="hand"
        )
    assert profile.states_ is None
    with pytest.raises(ProfileError, match="state abstraction"):
        BS().bind(profile)


def test_masked_arrays_are_refused_and_tensors_that_require_grad_are_read(
    stacked_model, seq_inputs
):
    """A masked array's mask was dropped without a word (masked rows shifted the profile's
    thresholds); a torch tensor requiring grad was a bare RuntimeError."""
    rnn = RNNModel(stacked_model, "lstm_b")
    masked = np.ma.masked_greater(seq_inputs, 0.9)
    assert np.ma.count_masked(masked)
    mutator = GaussianMutator(variance=0.1, clip=None)
    for call in (rnn.predict, rnn.trace, lambda x: Profile().fit(rnn, x), mutator.check_seeds):
        with pytest.raises(InvalidInput, match="masked array with .* masked values; .*filled"):
            call(masked)
    unmasked = np.ma.masked_array(seq_inputs)  # no value masked: read as it is
    np.testing.assert_array_equal(rnn.predict(unmasked), rnn.predict(seq_inputs))
    grad = torch.from_numpy(seq_inputs).requires_grad_(True)
    np.testing.assert_array_equal(rnn.predict(grad), rnn.predict(seq_inputs))
    np.testing.assert_array_equal(mutator.check_seeds(grad), seq_inputs)
