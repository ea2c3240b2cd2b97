"""The PyTorch adapter: every recomputed trace equals PyTorch's own module, for LSTM, GRU
and RNN with batch_first either way, stacked and bidirectional layers, proj_size,
PackedSequence inputs and modules nested anywhere in the tree."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence

from pytest_rnncov import Coverage, InvalidInput, ModelError, Profile, RNNCovWarning, RNNModel
from pytest_rnncov.adapters import base as adapter_base
from pytest_rnncov.errors import StaleProfile, UnknownLayer

H_TOL = 1e-5
KINDS = {"LSTM": nn.LSTM, "GRU": nn.GRU, "RNN": nn.RNN}


class Wrapped(nn.Module):
    """Batch-major inputs, a recurrent module nested as ``encoder.rnn``, a linear head."""

    def __init__(self, rnn: nn.Module, classes: int = 3) -> None:
        super().__init__()
        self.encoder = nn.Module()
        self.encoder.rnn = rnn
        width = rnn.proj_size or rnn.hidden_size if isinstance(rnn, nn.LSTM) else rnn.hidden_size
        self.head = nn.Linear(width * (2 if rnn.bidirectional else 1), classes)

    def forward(self, x):
        rnn = self.encoder.rnn
        out, _ = rnn(x if rnn.batch_first else x.transpose(0, 1))
        return self.head(out[:, -1] if rnn.batch_first else out[-1])


def reference(rnn: nn.Module, x: np.ndarray, depth: int):
    """(batch-major output sequence, final states) of stacked layer ``depth``, by PyTorch:
    a copy of the module cut after that layer."""
    kwargs = dict(
        input_size=rnn.input_size,
        hidden_size=rnn.hidden_size,
        num_layers=depth + 1,
        batch_first=True,
        bidirectional=rnn.bidirectional,
        bias=rnn.bias,
    )
    if isinstance(rnn, nn.LSTM):
        kwargs["proj_size"] = rnn.proj_size
    if isinstance(rnn, nn.RNN):
        kwargs["nonlinearity"] = rnn.nonlinearity
    cut = type(rnn)(**kwargs)
    cut.load_state_dict(
        {k: v for k, v in rnn.state_dict().items() if int(k.split("_l")[1][0]) <= depth}
    )
    with torch.no_grad():
        out, states = cut(torch.from_numpy(x))
    return out.numpy(), states


@pytest.fixture(scope="module")
def x():
    return np.random.default_rng(0).normal(size=(9, 6, 3)).astype(np.float32)


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("batch_first", [True, False])
@pytest.mark.parametrize(("layers", "depth"), [(1, 0), (2, 1), (3, 0)])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_every_layer_matches_pytorch(x, kind, batch_first, layers, depth, bidirectional):
    torch.manual_seed(layers * 10 + depth)
    rnn = KINDS[kind](3, 5, num_layers=layers, batch_first=batch_first, bidirectional=bidirectional)
    model = Wrapped(rnn)
    name = "encoder.rnn" + (f".l{depth}" if layers > 1 else "")
    out, states = reference(rnn, x, depth)
    forward = RNNModel(model, name)
    assert (
        forward.layer_name == name
        and forward.cell_kind == {"LSTM": "lstm", "GRU": "gru", "RNN": "simple_rnn"}[kind]
    )
    trace = forward.trace(x)
    np.testing.assert_allclose(trace.h, out[..., :5], atol=H_TOL, rtol=0)
    if bidirectional:
        backward = RNNModel(model, name, direction="backward")
        assert backward.layer_name == name + "/backward"
        np.testing.assert_allclose(backward.trace(x).h[:, ::-1], out[..., 5:], atol=H_TOL, rtol=0)
    directions = 2 if bidirectional else 1
    if kind == "LSTM":  # the cell state, checked through PyTorch's final c
        np.testing.assert_allclose(
            trace.c[:, -1], states[1][depth * directions].numpy(), atol=1e-4, rtol=0
        )
    outputs, _ = forward.run(x)
    with torch.no_grad():
        np.testing.assert_allclose(outputs, model(torch.from_numpy(x)).numpy(), atol=1e-6)


def test_gru_gates_follow_pytorchs_update_rule(x):
    torch.manual_seed(1)
    trace = RNNModel(Wrapped(nn.GRU(3, 4, batch_first=True))).trace(x)
    previous = np.concatenate([np.zeros_like(trace.h[:, :1]), trace.h[:, :-1]], axis=1)
    np.testing.assert_allclose(trace.h, (1 - trace.z) * trace.n + trace.z * previous, atol=1e-6)


def test_proj_size_and_no_bias(x):
    torch.manual_seed(2)
    rnn = nn.LSTM(3, 6, proj_size=2, batch_first=True, bias=False)
    trace = RNNModel(Wrapped(rnn)).trace(x)
    out, (h, c) = reference(rnn, x, 0)
    assert trace.h.shape == (9, 6, 2) and trace.c.shape == (9, 6, 6)
    np.testing.assert_allclose(trace.h, out, atol=H_TOL, rtol=0)
    np.testing.assert_allclose(trace.c[:, -1], c[0].numpy(), atol=1e-4, rtol=0)


def test_relu_rnn(x):
    torch.manual_seed(3)
    rnn = nn.RNN(3, 4, nonlinearity="relu", batch_first=True)
    np.testing.assert_allclose(
        RNNModel(Wrapped(rnn)).trace(x).h, reference(rnn, x, 0)[0], atol=H_TOL, rtol=0
    )


class Tokens(nn.Module):
    """Token ids (0 = padding, right-padded) -> Embedding -> packed GRU -> head."""

    def __init__(self, kind=nn.GRU, bidirectional=False, layers=1):
        super().__init__()
        self.embed = nn.Embedding(20, 4, padding_idx=0)
        self.rnn = kind(4, 5, batch_first=True, bidirectional=bidirectional, num_layers=layers)
        self.head = nn.Linear(5 * (2 if bidirectional else 1), 1)

    def forward(self, ids):
        lengths = (ids != 0).sum(dim=1).clamp(min=1)
        packed = pack_padded_sequence(
            self.embed(ids), lengths.cpu(), batch_first=True, enforce_sorted=False
        )
        _, h = self.rnn(packed)
        h = h[0] if isinstance(h, tuple) else h
        last = torch.cat([h[-2], h[-1]], dim=1) if self.rnn.bidirectional else h[-1]
        return self.head(last)


@pytest.mark.parametrize("kind", [nn.GRU, nn.LSTM])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_packed_sequences(kind, bidirectional):
    torch.manual_seed(4)
    model = Tokens(kind, bidirectional, layers=2)
    ids = np.random.default_rng(1).integers(1, 20, size=(7, 8))
    lengths = np.array([8, 3, 5, 1, 8, 2, 6])
    ids[np.arange(8)[None, :] >= lengths[:, None]] = 0
    rnn = RNNModel(model, "rnn.l1")
    trace = rnn.trace(ids)
    np.testing.assert_array_equal(trace.mask, ids != 0)
    # the final hidden state of the top layer is h at each sequence's last real step
    with torch.no_grad():
        packed = pack_padded_sequence(
            model.embed(torch.from_numpy(ids)),
            torch.from_numpy(lengths),
            batch_first=True,
            enforce_sorted=False,
        )
        _, h = model.rnn(packed)
        h = (h[0] if isinstance(h, tuple) else h).numpy()
    top_forward = h[2] if bidirectional else h[1]
    np.testing.assert_allclose(trace.h[:, -1], top_forward, atol=H_TOL, rtol=0)
    if bidirectional:
        backward = RNNModel(model, "rnn.l1", direction="backward").trace(ids)
        np.testing.assert_allclose(backward.h[:, -1], h[3], atol=H_TOL, rtol=0)


class SortsItself(nn.Module):
    """The classic pattern: sort the batch by length, pack with enforce_sorted=True (or
    ``sort=False``: the inputs must come sorted), unsort the outputs."""

    def __init__(self, sort=True):
        super().__init__()
        self.sort = sort
        self.rnn = nn.GRU(3, 5, batch_first=True)

    def forward(self, x):
        lengths = (x.abs().sum(-1) != 0).sum(1).clamp(min=1)
        order = lengths.argsort(descending=True) if self.sort else torch.arange(len(x))
        _, h = self.rnn(pack_padded_sequence(x[order], lengths[order], batch_first=True))
        return h[-1][order.argsort()]


def padded(lengths, seed=0):
    x = np.random.default_rng(seed).normal(size=(len(lengths), 6, 3)).astype(np.float32)
    x[np.arange(6)[None, :] >= np.array(lengths)[:, None]] = 0
    return x


def test_a_model_that_reorders_its_batch_before_the_module_is_refused():
    # its rows came back in the sorted order: input 0 got input 1's trace
    torch.manual_seed(0)
    rnn = RNNModel(SortsItself())
    with pytest.raises(
        ModelError,
        match="module 'rnn' does not get the inputs' rows in their order: the model reorders "
        "its batch.*enforce_sorted=False",
    ):
        rnn.trace(padded([2, 6, 4, 3]))
    # a batch of one length cannot show a sort: the check waits for one that can
    rnn = RNNModel(SortsItself())
    rnn.trace(padded([6, 6, 6]))
    with pytest.raises(ModelError, match="reorders its batch"):
        rnn.trace(padded([2, 6, 4, 3]))
    # a first batch sorted already: its reversal shows the sort (less an input, it did not)
    for lengths in ([6, 3], [6, 6, 3], [6, 6, 6, 2]):
        with pytest.raises(ModelError, match="reorders its batch"):
            RNNModel(SortsItself()).trace(padded(lengths))

    class Flips(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.GRU(3, 5, batch_first=True)

        def forward(self, x):
            return self.rnn(torch.flip(x, dims=(0,)))[0][:, -1].flip(0)

    with pytest.raises(ModelError, match="reorders its batch"):
        RNNModel(Flips()).trace(padded([6, 6, 6], seed=1))


class GRUWith(nn.Module):
    """A GRU(3, 5) called by ``call(module, x)``: what a model does around its layer."""

    def __init__(self, call):
        super().__init__()
        self.rnn, self.call = nn.GRU(3, 5, batch_first=True), call

    def forward(self, x):
        return self.call(self, x)


def longest(x):
    return int((x.abs().sum(-1) != 0).sum(1).max())


def test_models_that_keep_their_rows_in_order_in_other_ways_are_traced():
    """Each was refused, or broke, in the first order checks: padding trimmed to the batch's
    longest input (the probe less the longest ran fewer steps: a bare size error; left
    padded, its steps end where the batch's do), rows padded to a multiple of 8 (a probe of
    7 reached the module as 8)."""

    def trims(self, x):
        return self.rnn(x[:, : longest(x)])[0][:, -1]

    def trims_left(self, x):
        return self.rnn(x[:, x.shape[1] - longest(x) :])[0][:, -1]

    def pads_rows(self, x):
        pad = (-len(x)) % 8
        return self.rnn(nn.functional.pad(x, (0, 0, 0, 0, 0, pad)))[1][-1][: len(x)]

    def normalises(self, x):  # zero padding steps become NaN: NaN rows are rows all the same
        return self.rnn(x / x.norm(dim=-1, keepdim=True))[0][:, -1]

    def normalises_steps(self, x):  # as above, the padding steps' NaN then set to 0
        return self.rnn(torch.nan_to_num(x / x.norm(dim=-1, keepdim=True)))[0][:, -1]

    def trims_left_with_positions(self, x):  # positions 0..L-1 over the kept steps
        kept = x[:, x.shape[1] - longest(x) :]
        return self.rnn(kept + torch.arange(kept.shape[1])[None, :, None] / 10)[0][:, -1]

    torch.manual_seed(0)
    right = padded([3, 2, 4, 6])
    for call, x in (
        (trims, right),
        (trims_left, right[:, ::-1].copy()),
        (pads_rows, padded([6] * 8, seed=2)),
        (normalises_steps, right),
        # the batch's longest input is not among its first 32: the probes take it first
        (trims_left_with_positions, padded([3, 2] * 20 + [6])[:, ::-1].copy()),
    ):
        model = GRUWith(call)  # the batch's longest input has every step: nothing trimmed
        trace = RNNModel(model).trace(x)
        seen = []  # the module's own output sequence, from the model's own call
        model.rnn.register_forward_hook(lambda module, args, out: seen.append(out[0]))
        with torch.no_grad():
            model(torch.from_numpy(x))
        own = seen[0][: len(x)].numpy()  # pads_rows: the inputs' rows come first
        np.testing.assert_allclose(trace.h, own, atol=H_TOL, rtol=0)
    # the order checks pass it; its states at the padding steps are NaN, which the trace
    # refuses (a metric would too) rather than hand back
    with pytest.raises(InvalidInput, match=r"states z hold NaN or inf for the inputs in rows"):
        RNNModel(GRUWith(normalises)).trace(right)


def test_a_reordering_model_is_caught_whatever_orders_it_refuses():
    """A flip in a model that takes even batches only (the probe less an input failed, and
    the check ended unchecked), and an unpacked sort whose first batch is a sorted pair."""

    def flips_even(self, x):
        if len(x) % 2:
            raise ValueError("batches of pairs")
        return self.rnn(x.flip(0))[0][:, -1].flip(0)

    def sorts_unpacked(self, x):
        order = (x.abs().sum(-1) != 0).sum(1).argsort(descending=True, stable=True)
        return self.rnn(x[order])[1][-1][order.argsort()]

    def swaps_halves(self, x):  # rotated by n/2: commutes with a reversal and a rotation
        if len(x) % 2:
            raise ValueError("batches of pairs")
        half = len(x) // 2
        return self.rnn(torch.cat([x[half:], x[:half]]))[0][:, -1]

    with pytest.raises(ModelError, match="reorders its batch"):
        RNNModel(GRUWith(flips_even)).trace(padded([6, 6, 6, 6], seed=1))
    with pytest.raises(ModelError, match="reorders its batch"):
        RNNModel(GRUWith(sorts_unpacked)).trace(padded([6, 3]))
    with pytest.raises(ModelError, match="reorders its batch"):
        RNNModel(GRUWith(swaps_halves)).trace(padded([6] * 8))
    # one length: torch.sort moves equal keys of more than 16 (it is not stable), so a
    # packed batch of one length is checked too (it was let through, every row wrong)
    with pytest.raises(ModelError, match="reorders its batch"):
        RNNModel(SortsItself()).trace(padded([6] * 40))

    # a stable sort, whose first 32 inputs tie at the longest: the probes take the batch's
    # longest and shortest inputs first (32 ties stayed in place, and it was let through)
    def sorts_stably(self, x):
        lengths = (x.abs().sum(-1) != 0).sum(1)
        order = lengths.argsort(descending=True, stable=True)
        packed = pack_padded_sequence(x[order], lengths[order], batch_first=True)
        return self.rnn(packed)[1][-1][order.argsort()]

    with pytest.raises(ModelError, match="reorders its batch"):
        RNNModel(GRUWith(sorts_stably)).trace(padded([6] * 40 + [3, 2] * 12))

    # a model of batches of two: its longest input last, reversed they were as given
    def sorts_pairs(self, x):
        if len(x) != 2:
            raise ValueError("batches of two")
        return sorts_unpacked(self, x)

    with pytest.raises(ModelError, match="reorders its batch"):
        RNNModel(GRUWith(sorts_pairs)).trace(padded([2, 6]))
    # an unpacked sort whose first batch has one length: it does not end the check
    rnn = RNNModel(GRUWith(sorts_unpacked))
    rnn.trace(padded([6] * 8))
    with pytest.raises(ModelError, match="reorders its batch"):
        rnn.trace(padded([2, 6, 4, 3]))


def test_a_model_whose_rows_depend_on_the_batch_is_refused_saying_so():
    def standardises(self, x):  # statistics over the batch, at inference too
        return self.rnn((x - x.mean(0)) / (x.std(0) + 1e-3))[0][:, -1]

    with pytest.raises(ModelError, match="depend on the other inputs"):
        RNNModel(GRUWith(standardises)).trace(padded([6, 6, 6, 6]))


def test_a_model_that_must_get_its_inputs_sorted_is_traced_in_their_order():
    torch.manual_seed(0)
    model = SortsItself(sort=False)  # enforce_sorted=True: unsorted inputs fail in torch
    x = padded([6, 4, 3, 2])
    trace = RNNModel(model).trace(x)
    with torch.no_grad():
        for i, n in enumerate([6, 4, 3, 2]):
            own = model.rnn(torch.from_numpy(x[i : i + 1, :n]))[0][0].numpy()
            np.testing.assert_allclose(trace.h[i, :n], own, atol=H_TOL, rtol=0)


def test_coverage_and_profile_on_a_torch_model(x, tmp_path):
    torch.manual_seed(5)
    model = Wrapped(nn.LSTM(3, 4, batch_first=True))
    rnn = RNNModel(model)
    profile = Profile(window=(1, 5)).fit(rnn, x)
    profile.save(tmp_path / "p.json")
    loaded = Profile.load(tmp_path / "p.json")
    coverage = Coverage(rnn, loaded)
    coverage.update(x)
    assert coverage.n_inputs_ == 9 and 0 < coverage.rates()["TC"] <= 1
    with torch.no_grad():
        model.head.weight.add_(0.01)  # past the traced layer: a module shows no order unrun
    with pytest.raises(
        StaleProfile,
        match=r"weights fingerprint .* \(the model changed where the fingerprint looks: every "
        "floating-point tensor of the module's state_dict, also those past the traced layer",
    ):
        loaded.check(RNNModel(model))
    with torch.no_grad():
        model.head.weight.sub_(0.01)
        model.encoder.rnn.weight_hh_l0.add_(0.01)
    with pytest.raises(StaleProfile, match="weights fingerprint"):
        loaded.check(RNNModel(model))


def test_torch_errors(x):
    with pytest.raises(ModelError, match="has no nn.LSTM, nn.GRU or nn.RNN module"):
        RNNModel(nn.Linear(3, 2))
    model = Wrapped(nn.LSTM(3, 4, num_layers=2, batch_first=True))
    with pytest.raises(ModelError, match=r"has 2 stacked layers, .l0 to .l1"):
        RNNModel(model, "encoder.rnn.l2")
    with pytest.raises(
        UnknownLayer,
        match=r"'encoder.rnn' \(LSTM, index 0, 2 stacked layers: 'encoder.rnn.l1' for the second",
    ):
        RNNModel(model, "decoder")
    with pytest.raises(
        UnknownLayer,
        match=r"layer=1 is no index of a recurrent module \(0 to 0\); the recurrent modules "
        r"are 'encoder.rnn' \(LSTM, index 0",
    ):
        RNNModel(model, 1)
    with pytest.raises(UnknownLayer, match="is not a recurrent module"):  # a full-width 1
        RNNModel(model, "encoder.rnn.l\uff11")
    with pytest.raises(ModelError, match="pass layer='encoder.rnn.l1', direction='backward'"):
        RNNModel(model, "encoder.rnn.l1/backward")  # as the reports name a backward half
    rnn = RNNModel(model)
    with pytest.raises(InvalidInput, match=r"shape \(6,\); pass a batch, of shape \(batch"):
        rnn.trace(x[0, :, 0])  # the input shape is not known yet
    rnn.trace(x)
    with pytest.raises(InvalidInput, match=r"expects \(batch, 6, 3\)"):
        rnn.trace(x[:, :4])
    with pytest.raises(InvalidInput, match=r"shape \(6,\); model .* expects \(batch, 6, 3\)$"):
        rnn.trace(x[0, :, 0])  # labels, say: x[None] would not do
    with pytest.raises(InvalidInput, match=r"expects \(batch, 6, 3\) \(add a batch axis"):
        rnn.trace(x[0])

    class Seeded(nn.Module):
        def __init__(self, fill: float, kind=nn.GRU):
            super().__init__()
            self.rnn, self.fill = kind(3, 2, batch_first=True, num_layers=2), fill

        def forward(self, x):
            h0 = torch.full((2, x.shape[0], 2), self.fill)
            return self.rnn(x, h0 if isinstance(self.rnn, nn.GRU) else (h0, h0))[0][:, -1]

    for kind in (nn.GRU, nn.LSTM):  # zeros written out are the zeros the layer starts from
        zeros = Seeded(0.0, kind)
        traced = RNNModel(zeros, "rnn.l1").trace(x)
        np.testing.assert_allclose(traced.h, reference(zeros.rnn, x, 1)[0], atol=H_TOL, rtol=0)
        with pytest.raises(ModelError, match="called with a nonzero initial state"):
            RNNModel(Seeded(0.5, kind)).trace(x)


ALL_METRICS = ("BC", "SC", "TC", "NC", "KMNC", "NBC", "SNAC", "BS", "SBC", "BT", "WT")


def assert_same_coverage(numpy_path, device_path, profile, x, metrics=ALL_METRICS):
    """The device path (torch arrays, here on the CPU) gives the numpy path's covered
    conditions, coverage times and best fitness (float32 ties aside)."""
    a = Coverage(numpy_path, profile, metrics)
    b = Coverage(device_path, profile, metrics)
    a.update(x)
    b.update(x)
    for name in metrics:
        np.testing.assert_array_equal(a[name].times_, b[name].times_, err_msg=name)
        np.testing.assert_allclose(
            a[name].best_fitness_, b[name].best_fitness_, atol=1e-5, err_msg=name
        )


@pytest.mark.parametrize("kind", [nn.LSTM, nn.GRU, nn.RNN])
def test_the_device_path_equals_the_numpy_path(x, kind):
    torch.manual_seed(6)
    model = Wrapped(kind(3, 5, num_layers=2, batch_first=False, bidirectional=True))
    numpy_path = RNNModel(model, "encoder.rnn.l1")
    device_path = RNNModel(model, "encoder.rnn.l1", trace_on="device")
    assert (numpy_path.trace_on, device_path.trace_on) == ("numpy", "device")
    trace = device_path.trace(x)
    assert not trace.on_host and isinstance(trace.h, torch.Tensor)
    for name in trace.names:
        np.testing.assert_allclose(
            trace.to_host().components[name], numpy_path.trace(x).components[name], atol=1e-6
        )
    train = np.random.default_rng(3).normal(size=(60, 6, 3)).astype(np.float32)
    profile = Profile(window=(1, 5)).fit(numpy_path, train)
    assert_same_coverage(numpy_path, device_path, profile, x)


def test_the_device_path_checks_inputs_for_nan_on_the_device(x, monkeypatch):
    model = Wrapped(nn.GRU(3, 5, batch_first=False))
    device_path = RNNModel(model, "encoder.rnn", trace_on="device")
    profile = Profile(window=(1, 5)).fit(device_path, x)
    bad = x.copy()
    bad[1, 2, 0] = np.nan
    bad[4, 0, 1] = -np.inf
    scans = []
    monkeypatch.setattr(adapter_base, "all_finite", lambda a: scans.append(a) or True)
    for call in (device_path.trace, Coverage(device_path, profile).update, device_path.run):
        with pytest.raises(InvalidInput, match=r"NaN or inf .*in rows \[1, 4\]"):
            call(bad)
    assert scans == []  # no host scan: the check ran on the device, in the forward pass
    with pytest.raises(InvalidInput, match=r"rows \[1, 4\]"):
        device_path.predict(bad)
    assert len(scans) == 1  # predict also scans on the host (the model's own call need not)


def test_the_device_path_refuses_nan_before_absorbing_any_batch(x):
    """Inputs that take several framework calls are scanned on the host first: no batch
    before the bad row is counted, and the rows named are the input's own."""
    device_path = RNNModel(Wrapped(nn.GRU(3, 5)), "encoder.rnn", trace_on="device", batch_size=2)
    profile = Profile(window=(1, 5)).fit(device_path, x)
    coverage = Coverage(device_path, profile)
    bad = x.copy()
    bad[5, 1, 1] = np.nan
    with pytest.raises(InvalidInput, match=r"NaN or inf in rows \[5\]"):
        coverage.update(bad)
    assert coverage.n_inputs_ == 0 and not any(m.covered_.any() for m in coverage.metrics.values())
    with pytest.raises(InvalidInput, match=r"beyond float32's range .*rows \[2\]"):
        device_path.trace(np.where(np.arange(9)[:, None, None] == 2, 1e300, x.astype(np.float64)))


def test_the_device_path_says_nan_where_the_model_fails_on_it(x):
    class Picky(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.rnn = nn.GRU(3, 5, batch_first=True)

        def forward(self, inputs):
            if torch.isnan(inputs).any() or len(inputs) == 2:
                raise ValueError("bad input")
            return self.rnn(inputs)[0][:, -1]

    device_path = RNNModel(Picky(), "rnn", trace_on="device")
    bad = x.copy()
    bad[3, 0, 0] = np.nan
    with pytest.raises(InvalidInput, match=r"NaN or inf in rows \[3\]"):
        device_path.trace(bad)
    with pytest.raises(ModelError, match="bad input"):  # other failures stay the model's
        device_path.trace(x[:2])


def test_the_device_path_with_packed_sequences():
    torch.manual_seed(7)
    model = Tokens(nn.LSTM, bidirectional=True, layers=2)
    ids = np.random.default_rng(2).integers(1, 20, size=(9, 8))
    ids[np.arange(8)[None, :] >= np.array([8, 3, 5, 1, 8, 2, 6, 4, 7])[:, None]] = 0
    numpy_path, device_path = (
        RNNModel(model, "rnn.l1"),
        RNNModel(model, "rnn.l1", trace_on="device"),
    )
    np.testing.assert_array_equal(device_path.trace(ids).to_host().mask, ids != 0)
    profile = Profile(window=(2, 7)).fit(numpy_path, ids)
    # padded steps repeat a real step's h, so the profile's per-neuron minima and maxima are
    # values the test inputs hit exactly: KMNC sections and state cells there are float32
    # ties (the two paths' h differ by about 1e-8); every other metric is compared
    assert_same_coverage(
        numpy_path, device_path, profile, ids, metrics=("BC", "SC", "TC", "NC", "NBC", "SNAC")
    )


# -- unusual models (a hostile pass): the layer's own values, or a refusal naming the fix ----
class Then(nn.Module):
    """``rnn`` (an LSTM or a stacked GRU), then ``after`` applied to its output sequence."""

    def __init__(self, rnn: nn.Module, after: nn.Module) -> None:
        super().__init__()
        self.rnn, self.after, self.head = rnn, after, nn.Linear(rnn.hidden_size, 2)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.head(self.after(out)[:, -1])


@pytest.mark.parametrize("layers", [1, 2])
def test_a_model_changing_the_layers_output_in_place_is_traced_from_the_layers_own(layers):
    """``ReLU(inplace=True)`` after the layer: the hooks kept the tensor the model then
    changed, so the trace read the clipped h (off by 0.3; 0.45 for a stacked layer's split
    pass). Now the pass is run again keeping copies, and every later pass keeps them."""
    torch.manual_seed(0)
    x = np.random.default_rng(0).normal(size=(8, 5, 3)).astype(np.float32)
    rnn = (nn.LSTM if layers == 1 else nn.GRU)(3, 4, num_layers=layers, batch_first=True)
    model = Then(rnn, nn.ReLU(inplace=True))
    expected, _ = reference(rnn, x, layers - 1)
    with torch.no_grad():
        own = model(torch.from_numpy(x)).numpy()
    tracked = RNNModel(model, "rnn" if layers == 1 else "rnn.l1")
    for _ in range(2):  # the first pass is run again; the second keeps copies at once
        outputs, trace = tracked.run(x)
        np.testing.assert_allclose(trace.h, expected, atol=H_TOL)
        np.testing.assert_allclose(outputs, own, atol=1e-6)
    assert (trace.h < 0).any()  # what the ReLU clipped in the model's own copy


def test_the_users_own_output_hook_does_not_change_the_trace():
    """A forward hook of the user's that returns a new output (2 h): the trace is the
    layer's own h (it was 2 h, and the gates were computed from it)."""
    torch.manual_seed(0)
    x = np.random.default_rng(0).normal(size=(8, 5, 3)).astype(np.float32)
    rnn = nn.GRU(3, 4, batch_first=True)
    model = Then(rnn, nn.Identity())
    expected, _ = reference(rnn, x, 0)
    rnn.register_forward_hook(lambda module, args, out: (out[0] * 2, out[1]))
    trace = RNNModel(model, "rnn").trace(x)
    np.testing.assert_allclose(trace.h, expected, atol=H_TOL)
    np.testing.assert_allclose(
        trace.z, RNNModel(model, "rnn", recompute=True).trace(x).z, atol=H_TOL
    )


def test_the_users_own_pre_hook_changes_what_the_layer_runs_on_and_the_trace():
    """A forward pre-hook of the user's that doubles the layer's input: the layer runs on
    2 x, and so does the trace (gates and the reference's h included)."""
    torch.manual_seed(0)
    x = np.random.default_rng(0).normal(size=(8, 5, 3)).astype(np.float32)
    rnn = nn.GRU(3, 4, batch_first=True)
    model = Then(rnn, nn.Identity())
    plain = RNNModel(model, "rnn", recompute=True).trace(2 * x)
    rnn.register_forward_pre_hook(lambda module, args: (args[0] * 2,))
    for recompute in (False, True):
        trace = RNNModel(model, "rnn", recompute=recompute).trace(x)
        for name in ("h", "z", "r", "n"):
            np.testing.assert_allclose(
                getattr(trace, name), getattr(plain, name), atol=H_TOL, err_msg=name
            )


def test_a_stacked_layer_called_with_input_as_a_keyword_is_traced():
    """``rnn(input=x)``: the stacked module's split forward took ``sequences``, so the
    call failed inside the plugin, reported as the framework's."""

    class Keyword(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.GRU(3, 4, num_layers=2, batch_first=True)

        def forward(self, x):
            return self.rnn(input=x)[0][:, -1]

    torch.manual_seed(0)
    x = np.random.default_rng(0).normal(size=(4, 6, 3)).astype(np.float32)
    model = Keyword()
    expected, _ = reference(model.rnn, x, 1)
    np.testing.assert_allclose(RNNModel(model, "rnn.l1").trace(x).h, expected, atol=H_TOL)


def test_autocast_inside_forward_is_announced():
    """An nn.RNN: PyTorch's own kernel runs it in bfloat16 on every CPU (an LSTM goes to
    oneDNN, which on some CPUs, an AVX2 one here, has no bfloat16 LSTM: the model fails)."""

    class Autocast(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.RNN(3, 4, batch_first=True)

        def forward(self, x):
            with torch.autocast("cpu", dtype=torch.bfloat16):
                out = self.rnn(x)[0]
            return out[:, -1].float()

    x = np.random.default_rng(0).normal(size=(8, 5, 3)).astype(np.float32)
    rnn = RNNModel(Autocast(), "rnn")
    with pytest.warns(RNNCovWarning, match="runs under torch.autocast.*bfloat16"):
        rnn.trace(x)


def test_unusual_modules_are_refused_naming_the_fix():
    """Each was a bare torch error, an error about internal arguments, or a refusal that
    said there was no recurrent module."""
    from torch.nn.utils import parametrizations, prune
    from torch.nn.utils.rnn import pack_padded_sequence

    x = np.random.default_rng(0).normal(size=(4, 6, 3)).astype(np.float32)

    class Calls(nn.Module):
        def __init__(self, call, rnn=None):
            super().__init__()
            self.rnn, self.call = rnn or nn.GRU(3, 4, batch_first=True), call

        def forward(self, x):
            return self.call(self, x)

    def longer(self, x):  # a learned start step prepended, then packed
        lengths = torch.full((len(x),), x.shape[1] + 1)
        z = torch.cat([torch.zeros(len(x), 1, 3), x], 1)
        return self.rnn(pack_padded_sequence(z, lengths, batch_first=True))[1][-1]

    def unbatched(self, x):
        return torch.stack([self.rnn(seq)[0][-1] for seq in x])

    def last(self, x):
        return self.rnn(x)[0][:, -1]

    with torch.device("meta"):
        meta = Calls(last)
    with pytest.warns(FutureWarning):  # torch deprecates it for parametrizations.weight_norm
        legacy = Calls(last, nn.utils.weight_norm(nn.GRU(3, 4, batch_first=True), "weight_hh_l0"))
    spectral = Calls(last, nn.utils.spectral_norm(nn.GRU(3, 4, batch_first=True), "weight_ih_l0"))
    pruned = Calls(last)
    prune.random_unstructured(pruned.rnn, "bias_hh_l0", 0.5)
    shared = Calls(last)
    shared.alias = shared.rnn
    cases = [
        (Calls(longer), "rnn", "PackedSequence of 7 steps on inputs of 6"),
        (Calls(unbatched), "rnn", r"unbatched \(steps, features\) input.*call it on"),
        (meta, "rnn", "meta device.*to_empty"),
        (legacy, "rnn", r"holds weight_hh_l0 as other than its parameters .*remove_weight_norm"),
        (
            spectral,
            "rnn",
            r"holds weight_ih_l0 as other than its parameters .*remove_spectral_norm",
        ),
        (pruned, "rnn", r"holds bias_hh_l0 as other than its parameters .*prune.remove"),
        (shared, "alias", "layer='alias' is the module the model also holds as 'rnn'"),
        (
            Calls(
                last, parametrizations.weight_norm(nn.GRU(3, 4, batch_first=True), "weight_hh_l0")
            ),
            "rnn",
            r"'rnn' \(ParametrizedGRU\) is not one.*remove_parametrizations",
        ),
    ]
    for model, layer, message in cases:
        with pytest.raises(ModelError, match=message):
            RNNModel(model, layer).trace(x)


def test_a_projected_lstm_with_metrics_on_its_gates_alone():
    """proj_size: h is narrower than the gates. BC's default reads only the forget gate,
    so the trace holds no h; the check of a trace's units against the profile's (h's)
    refused it."""
    torch.manual_seed(0)
    x = np.random.default_rng(0).normal(size=(12, 5, 3)).astype(np.float32)
    model = Wrapped(nn.LSTM(3, 4, proj_size=2, batch_first=True))
    rnn = RNNModel(model, "encoder.rnn")
    profile = Profile().fit(rnn, x)
    fast, reference = (
        Coverage(rnn, profile, ["BC"]),
        Coverage(RNNModel(model, "encoder.rnn", recompute=True), profile, ["BC"]),
    )
    assert fast.components_ == ("f",)
    fast.update(x)
    reference.update(x)
    np.testing.assert_array_equal(fast["BC"].covered_, reference["BC"].covered_)


def test_one_model_traced_from_two_threads_gives_each_its_own_inputs_trace():
    """The hooks' buffers belong to the adapter: two threads' passes once swapped batches
    of one size silently (or failed, blaming the model for running 0 or 2 times)."""
    import copy
    import pickle
    import threading

    torch.manual_seed(0)
    rnn = RNNModel(Wrapped(nn.LSTM(3, 4, batch_first=True)))
    rng = np.random.default_rng(0)
    inputs = [rng.normal(size=(8, 6, 3)).astype(np.float32) for _ in range(2)]
    alone = [rnn.trace(x).h for x in inputs]
    got: dict[int, list[np.ndarray]] = {0: [], 1: []}

    def work(k: int) -> None:
        for _ in range(40):
            got[k].append(rnn.trace(inputs[k]).h)

    threads = [threading.Thread(target=work, args=(k,)) for k in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for k in (0, 1):
        assert len(got[k]) == 40
        assert all(np.array_equal(h, alone[k]) for h in got[k])
    for twin in (copy.deepcopy(rnn), pickle.loads(pickle.dumps(rnn))):  # the lock stays out
        np.testing.assert_array_equal(twin.trace(inputs[0]).h, alone[0])


def test_a_wrapped_model_whose_weights_changed_in_place_is_refused(x):
    """The cell copies the weights when wrapped: after an optimizer step the trace mixed
    the new model's h with the old weights' gates (|f| off by 0.37), silently."""
    torch.manual_seed(0)
    model = Wrapped(nn.LSTM(3, 4, batch_first=True))
    rnn = RNNModel(model)
    rnn.trace(x)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model(torch.from_numpy(x)).sum().backward()
    optimizer.step()
    with pytest.raises(ModelError, match="weights of module .* changed since it was wrapped"):
        rnn.trace(x)
    trace = RNNModel(model).trace(x)  # wrapped again: the model as it is now
    with torch.no_grad():
        own = model.encoder.rnn(torch.from_numpy(x))[0].numpy()
    np.testing.assert_allclose(trace.h, own, atol=1e-6)


def test_the_weights_check_refuses_only_weights_that_differ(x):
    """An identical load_state_dict moves the version counters but not the weights; an
    inference-mode model keeps no counters; a copy of a stale adapter stays refused; a
    masked array is refused here too (this adapter read it through np.asarray)."""
    import copy

    torch.manual_seed(0)
    model = Wrapped(nn.LSTM(3, 4, batch_first=True))
    rnn = RNNModel(model)
    expected = rnn.trace(x).h
    model.load_state_dict(model.state_dict())  # a fixture reloading its checkpoint
    np.testing.assert_array_equal(rnn.trace(x).h, expected)
    with torch.no_grad():
        model.encoder.rnn.weight_ih_l0.add_(0.1)
    stale = copy.deepcopy(rnn)
    for wrapped in (rnn, stale):
        with pytest.raises(ModelError, match="changed since it was wrapped"):
            wrapped.trace(x)
    with pytest.raises(InvalidInput, match="masked array with .* masked values"):
        RNNModel(model).trace(np.ma.masked_greater(x, 0.5))
    with torch.inference_mode():
        frozen = Wrapped(nn.LSTM(3, 4, batch_first=True))
    assert RNNModel(frozen).trace(x).h.shape == (len(x), x.shape[1], 4)


def test_two_adapters_of_one_module_take_turns_across_threads():
    """The hooks go on the module, shared by every adapter of it: one lock per module."""
    import threading

    torch.manual_seed(0)
    model = Wrapped(nn.LSTM(3, 4, batch_first=True))
    adapters = [RNNModel(model), RNNModel(model)]
    rng = np.random.default_rng(1)
    inputs = [rng.normal(size=(8, 6, 3)).astype(np.float32) for _ in range(2)]
    alone = [adapters[k].trace(inputs[k]).h for k in (0, 1)]
    wrong = []

    def work(k: int) -> None:
        for _ in range(30):
            if not np.array_equal(adapters[k].trace(inputs[k]).h, alone[k]):
                wrong.append(k)

    threads = [threading.Thread(target=work, args=(k,)) for k in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not wrong


@pytest.mark.parametrize("trace_on", ["numpy", "device"])
def test_float64_inputs_checked_in_parts_give_what_float32_inputs_give(x, monkeypatch, trace_on):
    """float64 inputs of more than INPUT_PART_BYTES (here 4 rows of 6 x 3: 576 bytes) are
    checked and cast in parts of 4 (9 rows: 4, 4, 1) on either path: the coverage and the
    outputs are the float32 inputs'; a NaN in input 6 is named as row 6."""
    from pytest_rnncov.core import source

    monkeypatch.setattr(source, "INPUT_PART_BYTES", 4 * 6 * 3 * 8)
    monkeypatch.setattr(source, "PART_MIN_ROWS", 1)
    rnn = RNNModel(Wrapped(nn.GRU(3, 5, batch_first=True)), "encoder.rnn", trace_on=trace_on)
    profile = Profile(window=(1, 5)).fit(rnn, x)
    wide, narrow = Coverage(rnn, profile), Coverage(rnn, profile)
    wide.update(x.astype(np.float64))
    narrow.update(x)
    for name in narrow.metrics:
        np.testing.assert_array_equal(wide[name].covered_, narrow[name].covered_)
        np.testing.assert_allclose(wide[name].best_fitness_, narrow[name].best_fitness_, atol=1e-6)
    np.testing.assert_allclose(rnn.predict(x.astype(np.float64)), rnn.predict(x), atol=1e-6)
    bad = x.astype(np.float64)
    bad[6, 1, 1] = np.nan
    with pytest.raises(InvalidInput, match=r"NaN or inf in rows \[6\];"):
        wide.update(bad)
    assert wide.n_inputs_ == 9
