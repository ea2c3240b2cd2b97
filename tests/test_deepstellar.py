"""DeepStellar metrics on hand-built traces: grid cells and transitions counted by hand."""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers import make_trace

from pytest_rnncov import BS, BT, SBC, WT, InvalidArgument, Profile, ProfileError, RNNCovWarning
from pytest_rnncov.core.metrics import Signals


def states(values):
    """h with unit 0 = values and unit 1 = 0: every state lies on one line."""
    v = np.asarray(values, np.float32)
    return make_trace(h=np.stack([v, np.zeros_like(v)], axis=-1))


# training states v: x0 = 0, 1, 2 and x1 = 2, 3, 4. Mean 2, so PC1 = unit 0 and z = v - 2 in
# [-2, 2]; 4 intervals of width 1: z -2 -> cell 0, -1 -> 1, 0 -> 2, 1 -> 3, 2 (top edge) -> 3.
# cells: x0 = 0, 1, 2 ; x1 = 2, 3, 3 -> training cells {0, 1, 2, 3}
# transitions (id = from * 4 + to): 0->1 = 1, 1->2 = 6, 2->3 = 11, 3->3 = 15, once each
PROFILE = Profile(state_components=1, state_intervals=4).fit_traces(
    [states([[0, 1, 2], [2, 3, 4]])], layer="hand", fingerprint="hand"
)


def covered(metric, values):
    m = metric.bind(PROFILE)
    trace = states(values)
    m.update(Signals(trace, PROFILE.window_), np.arange(trace.batch_size))
    return m


def test_the_state_model_by_hand():
    model = PROFILE.states_
    np.testing.assert_allclose(np.abs(model.components), [[1, 0]])
    assert (model.low[0], model.high[0]) == (-2, 2)
    assert model.cells.tolist() == [0, 1, 2, 3]
    assert model.transitions.tolist() == [1, 6, 11, 15]
    assert model.transition_counts.tolist() == [1, 1, 1, 1]


def test_basic_state_and_transition_coverage():
    # v = 0, 0, 3.5 -> z -2, -2, 1.5 -> cells 0, 0, 3: BS {0, 3}; transitions 0->0, 0->3 are new
    bs = covered(BS(), [[0, 0, 3.5]])
    assert bs.covered_ids() == [0, 3] and bs.rate == 0.5
    assert covered(BT(), [[0, 0, 3.5]]).covered == 0
    # v = 1, 2, 3 -> cells 1, 2, 3: transitions 1->2 and 2->3
    bt = covered(BT(), [[1, 2, 3]])
    assert bt.covered_ids() == [1, 2] and bt.label(1) == "training transition #1"
    assert covered(WT(), [[1, 2, 3]]).rate == 0.5


def test_weighted_transitions_weigh_by_training_counts():
    # training: x0 = 0,1,0,1 (0->1 twice, 1->0 once); x1 = 4, 4 (3->3 once) [z = v - mean]
    profile = Profile(state_components=1, state_intervals=4).fit_traces(
        [states([[0, 1, 0, 1], [4, 4, 4, 4]])], layer="hand", fingerprint="hand"
    )
    assert profile.states_.transition_counts.tolist() == [2, 1, 3]  # 0->1, 1->0, 3->3
    wt = WT().bind(profile)
    trace = states([[0, 1, 1, 1]])  # only 0->1 (and 1->1, not a training transition)
    wt.update(Signals(trace, profile.window_), np.arange(1))
    assert wt.covered == 1 and wt.rate == pytest.approx(2 / 6)


def test_k_step_boundary_coverage():
    # v = -0.5 -> z -2.5: interval -1, one below; v = 5.5 -> z 3.5: interval 5, two above
    one = covered(SBC(k=1), [[-0.5, 5.5, 2]])
    assert one.total == 2 and one.covered_ids() == [0]  # PC1 below by 1
    two = covered(SBC(k=2), [[-0.5, 5.5, 2]])
    assert [two.label(i) for i in two.covered_ids()] == ["PC1 below by 1", "PC1 above by 2"]
    # the top of the training range is inside, not a boundary
    assert covered(SBC(k=1), [[4, 4, 4]]).covered == 0


def test_profile_without_a_state_model_is_refused_by_name(tmp_path):
    with pytest.warns(RNNCovWarning, match="no DeepStellar state model"):
        flat = Profile(state_components=1).fit_traces(
            [states([[1, 1, 1], [1, 1, 1]])], layer="hand", fingerprint="hand"
        )
    with pytest.raises(ProfileError, match="BS needs the profile's state abstraction"):
        BS().bind(flat)
    PROFILE.save(tmp_path / "p.json")
    assert Profile.load(tmp_path / "p.json").states_.cells.tolist() == [0, 1, 2, 3]


def test_transition_ids_are_exact_up_to_the_most_abstract_states():
    """2**31 cells (2 intervals over 31 components) is the most a profile may have: the
    last transition's id, (2**31 - 1) * 2**31 + 2**31 - 2, is exact in int64; one component
    more is refused (its ids would wrap around)."""
    model = PROFILE.states_
    wide = type(model)(
        np.zeros(31), np.eye(31), -np.ones(31), np.ones(31), 2, *(np.zeros(0, np.int64),) * 3
    )
    assert wide.n_cells == 2**31
    last = np.array([[2**31 - 1, 2**31 - 2]], np.int64)
    assert wide.transitions_of(last).tolist() == [[(2**31 - 1) * 2**31 + 2**31 - 2]]
    Profile(state_components=31, state_intervals=2)
    with pytest.raises(InvalidArgument, match="too many to index their transitions"):
        Profile(state_components=32, state_intervals=2)
    with pytest.raises(InvalidArgument, match="too many"):
        Profile(state_components=10, state_intervals=10)


def test_a_profile_file_with_more_abstract_states_than_ids_is_refused(tmp_path):
    content = json.loads(PROFILE.text())
    states = content["states"]  # two components of 2**16 intervals: 2**32 cells, past 2**31
    states.update(components=[[1.0, 0.0], [0.0, 1.0]], low=[-2.0, -1.0], high=[2.0, 1.0])
    states["intervals"] = 2**16
    (tmp_path / "p.json").write_text(json.dumps(content))
    with pytest.raises(ProfileError, match="too many to index their transitions"):
        Profile.load(tmp_path / "p.json")


def test_a_layer_of_fewer_units_fits_as_many_directions_and_a_refit_asks_again(tmp_path):
    """state_components=5 on a 2-unit layer fits 2 directions; the setting stays 5, so the
    same Profile fitted again on a wider layer fits 5 (it once kept the 2 it had fitted)."""
    rng = np.random.default_rng(0)
    narrow = make_trace(h=rng.normal(size=(30, 4, 2)).astype(np.float32))
    wide = make_trace(h=rng.normal(size=(30, 4, 8)).astype(np.float32))
    profile = Profile(state_components=5)
    profile.fit_traces([narrow], layer="l", fingerprint="f")
    assert len(profile.states_.components) == 2 and profile.state_components == 5
    assert "PCA 2 x 10" in BS().bind(profile).describe()
    profile.save(tmp_path / "p.json")
    assert Profile.load(tmp_path / "p.json").state_components == 2
    profile.fit_traces([wide], layer="l", fingerprint="f")
    assert len(profile.states_.components) == 5


def test_a_profile_file_with_more_directions_than_a_profile_may_have_is_refused(tmp_path):
    """One interval per direction kept the cell count small, so 5,000 directions loaded
    (Profile() takes at most 64), and the data file the coverage wrote was refused later."""
    content = json.loads(PROFILE.text())
    k = 65
    content["states"].update(
        intervals=1, components=[[1.0, 0.0]] * k, low=[-1.0] * k, high=[1.0] * k,
        cells=[0], transitions=[0], transition_counts=[1],
    )  # fmt: skip
    (tmp_path / "p.json").write_text(json.dumps(content))
    with pytest.raises(ProfileError, match="'states' has 65 components, at most 64"):
        Profile.load(tmp_path / "p.json")


def test_weights_belong_to_wt_alone_in_a_state_file():
    """weights added to a BS state made its rate a weighted share (5/16 read as 100%)."""
    from pytest_rnncov import DataFileError
    from pytest_rnncov.core.state import MetricState

    for metric, values in ((BS(), [[0, 1, 2]]), (WT(), [[0, 1, 2]])):
        state = covered(metric, values).state_.to_json()
        if "weights" in state:
            del state["weights"]  # WT without its weights: an unweighted share
        else:
            state["weights"] = [1.0] * state["total"]
        with pytest.raises(DataFileError, match="'weights' belongs to WT only"):
            MetricState.from_json(state)


def test_no_condition_hint_fits_the_metric(tmp_path):
    """BS with no training cell was told that transitions need two steps."""
    content = json.loads(PROFILE.text())
    content["states"].update(cells=[], transitions=[], transition_counts=[])
    (tmp_path / "p.json").write_text(json.dumps(content))
    empty = Profile.load(tmp_path / "p.json")
    with pytest.raises(InvalidArgument, match="no condition to cover") as refused:
        BS().bind(empty)
    assert "transitions" not in str(refused.value)
    with pytest.raises(InvalidArgument, match="widen the window .transitions need two steps"):
        BT().bind(empty)
