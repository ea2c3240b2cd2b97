"""Hostile calls: arguments that used to raise a bare traceback or pass silently get the
project's own errors, naming the value and the fix."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import torch
from helpers import fit_profile, make_trace
from torch import nn

from pytest_rnncov import (
    BC,
    DataFileError,
    GaussianMutator,
    InvalidArgument,
    InvalidInput,
    MetricState,
    ModelState,
    Oracle,
    Profile,
    ProfileError,
    RNNCovWarning,
    RNNModel,
)
from pytest_rnncov.config.bars import Bars
from pytest_rnncov.config.values import parse_metrics, parse_seed
from pytest_rnncov.generation.encoders import CharEncoder, WordEncoder
from pytest_rnncov.generation.mutators import Mutator, checked_mutate
from pytest_rnncov.generation.series import TimeSeriesMutator


@pytest.mark.parametrize("encoder", [WordEncoder(["good"], length=3), CharEncoder("ab", length=3)])
def test_encoders_name_what_they_got_instead_of_texts(encoder):
    with pytest.raises(InvalidInput, match=r"texts=None \(NoneType\) is not a list of strings"):
        encoder(None)


def test_bc_refuses_alpha_min_at_or_above_alpha_max():
    with pytest.raises(InvalidArgument, match="alpha_min=0.9 must be below alpha_max=0.8"):
        BC(alpha_min=0.9, alpha_max=0.8)
    with pytest.raises(InvalidArgument, match="alpha_min=0.5 must be below alpha_max=0.5"):
        BC(alpha_min=0.5, alpha_max=0.5)


def test_calibrate_refuses_a_fraction_that_makes_the_radius_infinite():
    seeds = np.array([[1.0], [-1.0]])
    with pytest.raises(InvalidArgument, match=r"fraction=1e\+308 .* gives radius inf"):
        Oracle.calibrate(seeds, np.eye(2), fraction=1e308)


def test_boolean_seeds_and_mutants_are_refused_by_dtype():
    class Threshold(Mutator):
        def mutate(self, cases, rng):
            return np.asarray(cases) > 0.5

    with pytest.raises(InvalidInput, match="seeds have dtype bool"):
        GaussianMutator().check_seeds(np.zeros((2, 3), bool))
    with pytest.raises(
        InvalidInput, match="Threshold.mutate returned mutants that have dtype bool"
    ):
        checked_mutate(Threshold(), np.zeros((2, 3), np.float32), np.random.default_rng(0))


def test_time_warp_strength_is_bounded():
    with pytest.raises(InvalidArgument, match="warp=700.0 must be <= 10"):
        TimeSeriesMutator(warp=700)


def test_direction_applies_only_to_bidirectional_layers(keras):
    with pytest.raises(
        InvalidArgument, match="direction='backward', but layer 'GRU' is not bidirectional"
    ):
        RNNModel(nn.GRU(3, 4, batch_first=True), direction="backward", output=0)
    model = keras.Sequential([keras.Input((5, 3)), keras.layers.LSTM(4, name="only")])
    with pytest.raises(
        InvalidArgument, match="direction='backward', but layer 'only' is not bidirectional"
    ):
        RNNModel(model, direction="backward")


def test_a_bfloat16_torch_module_is_traced_in_float32_with_a_warning():
    torch.manual_seed(0)
    module = nn.LSTM(3, 4, batch_first=True).to(torch.bfloat16)
    with pytest.warns(RNNCovWarning, match="computes in bfloat16: expect differences"):
        rnn = RNNModel(module, output=0)
    x = np.random.default_rng(0).normal(size=(2, 5, 3)).astype(np.float32)
    outputs, trace = rnn.run(x)
    expected = module(torch.from_numpy(x).to(torch.bfloat16))[0].float().detach().numpy()
    assert outputs.dtype == np.float32
    np.testing.assert_allclose(trace.h, expected, atol=2e-2, rtol=0)


@pytest.mark.parametrize("text", ["١e-400", "٠.٩"])
def test_bars_and_seeds_are_written_in_ascii_digits(text):
    with pytest.raises(
        InvalidArgument, match=f"'{text}' holds non-ASCII characters .*write it with ASCII digits"
    ):
        Bars.parse(text)
    with pytest.raises(InvalidArgument, match="seed '١٢' holds non-ASCII characters"):
        parse_seed("١٢")


def test_bars_and_seeds_refuse_pythons_digit_groups():
    """float("0_5") is 5.0 and float("0.9_0") 0.9: an underscore read as nothing."""
    for text in ("0_5", "0.9_0", "BC:0.5_1"):
        with pytest.raises(InvalidArgument, match="holds '_'; write the number without it"):
            Bars.parse(text)
    with pytest.raises(InvalidArgument, match="seed '1_0' holds '_'"):
        parse_seed("1_0")


@pytest.mark.parametrize(
    ("text", "meant"),
    [
        ("0,9", "0.9"),
        ("BC:0,9", "BC:0.9"),
        ("0.9,TC:0,4", "TC:0.4"),
        ("m:*:1,5", "m:*:1.5"),
        ("BC:0,1", "BC:0.1"),  # BC at 0 and every metric at 1: no one means that
        ("BC : 0,25", "BC : 0.25"),
    ],
)
def test_a_decimal_comma_in_a_bar_is_named(text, meant):
    """--rnn-coverage=0,9 read as the bars 0 and 9: "9 is not a fraction; for 9% use 0.09"."""
    written = meant.replace(".", ",")
    with pytest.raises(
        InvalidArgument,
        match=re.escape(
            f"coverage bar '{written}': a comma separates bars, so this reads as two; for a "
            f"decimal write a point ({meant})"
        ),
    ):
        Bars.parse(text)


def test_bars_a_comma_joins_as_written_are_read_as_before():
    """BC:1,0 is the bar BC at 1 and a plain bar of 0: no decimal comma is guessed there."""
    assert [(b.metric, b.value) for b in Bars.parse("BC:1,0").entries] == [("BC", 1.0), (None, 0.0)]
    assert [(b.metric, b.model) for b in Bars.parse("m:*:1,0").entries] == [
        (None, "m"),
        (None, None),
    ]


def test_a_non_ascii_digit_after_a_comma_is_refused_as_before():
    """ "1,²": "²".isdigit() held, and int("²") raised a bare ValueError (an INTERNALERROR
    from the ini)."""
    with pytest.raises(InvalidArgument, match="holds non-ASCII characters"):
        Bars.parse("1,\u00b2")


def test_a_rate_below_a_bar_under_a_millionth_reads_below_it_and_above_0():
    """3/10**8 against 1e-7 read "-0.0001%"."""
    from pytest_rnncov.config.bars import percent

    for rate, bar in [(3 / 10**8, 1e-7), (5 / 10**8, 1e-6), (1 / 3**20, 1e-9)]:
        shown = percent(rate, below=bar)
        assert 0 < float(shown[:-1]) < bar * 100, shown


def test_a_bar_of_minus_zero_is_zero():
    """It read "Required RNN coverage of -0% reached." and "required": -0.0 in JSON."""
    (bar,) = Bars.parse("-0").entries
    assert str(bar.value) == "0.0" and Bars.parse("-0").describe() == "0 on BC,SC,TC"


def test_an_optional_key_written_as_null_says_to_leave_it_out():
    """A campaign summary's samples_error is left out when nothing failed; null read only
    "is None (NoneType), not str", as if the file were damaged."""
    from pytest_rnncov.errors import DataFileError
    from pytest_rnncov.files import Fields

    f = Fields({"a": 1, "note": None}, "campaign 1")
    f.exact_keys(["a"], optional=["note"])
    with pytest.raises(DataFileError, match=r"'note' is null, not str \(leave the key out"):
        f.get("note", str)
    with pytest.raises(DataFileError, match=r"'a' is 1 \(int\), not str$"):
        f.get("a", str)


def test_unknown_keys_in_profile_statistics_are_refused(tmp_path):
    content = fit_profile(make_trace(h=np.random.default_rng(0).normal(size=(6, 5, 3)))).to_dict()
    key = next(iter(content["signals"]))
    content["signals"][key]["median"] = 0.0
    path = tmp_path / "p.json"
    path.write_text(json.dumps(content))
    with pytest.raises(ProfileError, match=f"signals.{key} has unknown key 'median'"):
        Profile.load(path)


def test_a_framework_error_is_one_line_cut_with_an_ellipsis():
    """A framework's message can hold a whole graph: one line, at most 400 characters of it,
    and a cut one says so."""
    from pytest_rnncov.adapters.base import model_error_from

    short = model_error_from(RuntimeError("bad\n  shape"), "running m")
    assert str(short) == "running m failed in the framework: RuntimeError: bad shape"
    cut = str(model_error_from(ValueError("x" * 1000), "running m"))
    assert cut.endswith("x" * 399 + "…") and "x" * 400 not in cut
    whole = str(model_error_from(ValueError("y" * 400), "running m"))
    assert whole.endswith(": " + "y" * 400)


@pytest.mark.parametrize("text", ["BC,,SC", "BC,SC,", ",BC"])
def test_a_metric_list_with_an_empty_entry_is_refused(text):
    """--rnn-metrics=BC,,SC read as BC,SC: a typo that may have lost a metric went unsaid."""
    with pytest.raises(InvalidArgument, match=f"metrics '{text}' has an empty entry; separate"):
        parse_metrics(text)
    with pytest.raises(InvalidArgument, match="names no metric; give e.g. BC,SC,TC"):
        parse_metrics(" , ")
    assert parse_metrics(" bc, Sc ") == ("BC", "SC")


def test_a_bar_written_where_a_metric_goes_is_named():
    """``BC:0.5:0.4`` said "unknown metric '0.5'"."""
    with pytest.raises(InvalidArgument, match=r"'0\.5' stands where a metric goes; write BAR"):
        Bars.parse("BC:0.5:0.4")


def test_a_metric_state_counting_an_input_zero_times_names_the_bound():
    """It said "'times' holds values outside >= 1"."""
    tc = MetricState.empty("TC", "TC(h/net, w=2, a=2)", 4, {"w": 2, "a": 2})
    tc.times[1] = 3
    raw = tc.to_json()
    assert raw["times"] == [3]
    raw["times"] = [0]
    with pytest.raises(DataFileError, match=r"'times' holds a value below 1"):
        MetricState.from_json(raw)


def test_a_whole_number_bar_is_named_as_written():
    """Bars.parse(90) said "coverage bar '90.0'", a number the user never wrote."""
    with pytest.raises(InvalidArgument, match=r"coverage bar '90': 90 is not a fraction .*0\.9"):
        Bars.parse(90)
    with pytest.raises(
        InvalidArgument, match=r"coverage bar 1000000\d*\.\.\. is not a fraction in"
    ):
        Bars.parse(10**400)  # float(10**400) raised a bare OverflowError
    assert [b.value for b in Bars.parse(1).entries] == [1.0]
    assert [b.value for b in Bars.parse(np.float64(0.5)).entries] == [0.5]


class OneTensorGRU(nn.Module):
    """A GRU whose model returns one tensor (its last step), not a tuple."""

    def __init__(self) -> None:
        super().__init__()
        self.rnn = nn.GRU(3, 4, batch_first=True)

    def forward(self, x):
        return self.rnn(x)[0][:, -1]


def test_an_output_index_on_a_model_of_one_tensor_is_refused():
    """output=7 on a module returning one tensor was accepted and ignored."""

    x = np.random.default_rng(0).normal(size=(2, 5, 3)).astype(np.float32)
    with pytest.raises(
        InvalidArgument, match=r"output=7; model .* returns one tensor, not a tuple"
    ):
        RNNModel(OneTensorGRU(), output=7).predict(x)
    assert RNNModel(OneTensorGRU(), output=0).predict(x).shape == (2, 4)


def test_an_output_index_is_checked_when_a_profile_is_fitted():
    """Fitting a profile stops the pass at the traced layer, so output=7 on a module
    returning one tensor passed it (the CLI's ``profile fit --output 7`` wrote a profile and
    exited 0) and failed only at the first predict."""

    x = np.random.default_rng(0).normal(size=(20, 5, 3)).astype(np.float32)
    with pytest.raises(
        InvalidArgument, match=r"output=7; model .* returns one tensor, not a tuple"
    ):
        Profile().fit(RNNModel(OneTensorGRU(), output=7), x)
    assert Profile().fit(RNNModel(OneTensorGRU(), output=0), x).window_ == (0, 4)


def test_states_combine_only_with_states_of_their_kind():
    """``ModelState.merge(None)`` and ``MetricState.merge(None)`` raised a bare
    AttributeError ('NoneType' object has no attribute 'layer')."""
    tc = MetricState.empty("TC", "TC(h/net, w=2, a=2)", 4, {"w": 2, "a": 2})
    model = ModelState("m", "lstm", "lstm", (1, 5), "f", 1, {"TC": tc}, "p")
    for other in (None, "x", {}, tc):
        with pytest.raises(
            InvalidArgument, match=r"a ModelState combines with another ModelState .*, got "
        ):
            model.merge(other)
    for other in (None, model):
        with pytest.raises(
            InvalidArgument, match=r"a MetricState combines with another MetricState .*, got "
        ):
            tc.merge(other)


def test_a_model_state_without_metrics_is_refused():
    """A baseline whose model held ``"metrics": {}`` compared nothing and passed."""
    raw = ModelState("m", "lstm", "lstm", (1, 5), "f", 1, {}, "p").to_json()
    with pytest.raises(DataFileError, match=r"'metrics' is empty"):
        ModelState.from_json(raw)


def test_an_adapter_refuses_to_hand_back_what_its_model_overflowed_to():
    """predict, run and trace gave NaN for finite inputs on which the layer overflowed;
    an arg-max then read NaN rows as class 0."""

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.rnn = nn.RNN(3, 4, batch_first=True, nonlinearity="relu")
            self.head = nn.Linear(4, 2)

        def forward(self, x):
            return self.head(self.rnn(x)[0][:, -1])

    net = Net()
    with torch.no_grad():
        net.rnn.weight_hh_l0.fill_(10.0)
        net.rnn.weight_ih_l0.fill_(1.0)
    rnn = RNNModel(net)
    x = np.zeros((3, 6, 3), np.float32)
    x[1] = 1e35  # finite, within float32's range
    for call, what in [
        (rnn.predict, r"the model's outputs hold NaN, \+inf or no finite value"),
        (rnn.run, r"the model's outputs hold NaN, \+inf or no finite value"),
        (rnn.trace, "the layer's states h hold NaN or inf"),
    ]:
        with pytest.raises(InvalidInput, match=f"{what} for the inputs in rows"):
            call(x)
    assert np.isfinite(rnn.predict(x[[0, 2]])).all()

    class Masked(nn.Module):  # -inf for a class no input may take: a decision, not overflow
        def __init__(self, masked: list[bool], fill: float = float("-inf")) -> None:
            super().__init__()
            self.rnn = nn.GRU(3, 4, batch_first=True)
            self.masked, self.fill = torch.tensor(masked), fill

        def forward(self, x):
            return self.rnn(x)[0][:, -1, :3].masked_fill(self.masked, self.fill)

    masked = RNNModel(Masked([False, False, True]))
    assert np.isneginf(masked.predict(x[[0, 2]])[:, 2]).all()
    assert np.isneginf(masked.run(x[[0, 2]])[0][:, 2]).all()
    for module in (Masked([True] * 3), Masked([False, True, False], float("inf"))):
        with pytest.raises(InvalidInput, match=r"\+inf or no finite value for the inputs in"):
            RNNModel(module).predict(x)  # arg-max read a row of -inf, or +inf, as a class


@pytest.mark.parametrize("where", ["seeds", "outputs"])
def test_the_oracle_and_the_gaussian_mutator_read_tensors_as_the_model_does(where):
    """A tensor that requires grad raised torch's bare RuntimeError; masked values were
    read and complex seeds lost their imaginary part with a ComplexWarning."""
    rng = np.random.default_rng(0)
    seeds = rng.normal(size=(8, 5, 3)).astype(np.float32)
    outputs = rng.normal(size=(8, 2)).astype(np.float32)
    plain = Oracle.calibrate(seeds, outputs).radius
    if where == "seeds":
        graded = Oracle.calibrate(torch.from_numpy(seeds).requires_grad_(), outputs)
        assert GaussianMutator.from_seeds(torch.from_numpy(seeds).requires_grad_()).variance == (
            GaussianMutator.from_seeds(seeds).variance
        )
    else:
        graded = Oracle.calibrate(seeds, torch.from_numpy(outputs).requires_grad_())
    assert graded.radius == plain
    masked = np.ma.masked_array(seeds, mask=seeds > 1)
    with pytest.raises(InvalidInput, match="masked array with .* masked values"):
        if where == "seeds":
            Oracle.calibrate(masked, outputs)
        else:
            Oracle.calibrate(seeds, np.ma.masked_array(outputs, mask=outputs > 1))
    with pytest.raises(InvalidInput, match="masked array with .* masked values"):
        GaussianMutator.from_seeds(masked)
    with pytest.raises(InvalidInput, match="dtype complex64"):
        if where == "seeds":
            Oracle.calibrate(seeds.astype(np.complex64), outputs)
        else:
            GaussianMutator.from_seeds(seeds.astype(np.complex64))


def test_a_spread_too_large_for_a_variance_is_refused_by_name():
    """(1e200 * scale) ** 2 raised a bare OverflowError before the check that names it."""
    seeds = np.random.default_rng(0).normal(size=(8, 5, 3))
    with pytest.raises(InvalidInput, match=r"spread up to 1e\+201 of the seeds' spread .* lower"):
        GaussianMutator.from_seeds(seeds, spread=(1e200, 1e201))
