"""Fuzzing the three file formats: one random edit of a valid file is either refused by
name or read back exactly.

For data files, baselines and profiles: take a valid file made by the project's own writer,
apply one random edit to its JSON tree (replace a value with any JSON value or with the
same value of another type, delete a key, add a key, append or remove a list element, nudge
a number, change a string), write it and
load it with the project's reader. The reader must either raise its own error
(``DataFileError`` for data files and baselines, ``ProfileError`` for profiles) naming the
file, or return an object that the writer serialises back to exactly the edited JSON:
nothing dropped, defaulted, clamped, rounded or retyped. Any other exception fails.

The valid documents are built once from hand-made traces (no model is called), so the
Hypothesis loop only edits JSON and reads files.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import math
import os
import warnings
from typing import Any

import numpy as np
import pytest
from helpers import make_trace
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from pytest_rnncov import BS, KMNC, NBC, SBC, Profile, RNNCovWarning
from pytest_rnncov.core.metrics import Signals, make_metric
from pytest_rnncov.core.state import ModelState
from pytest_rnncov.errors import DataFileError, ProfileError, RNNCovError
from pytest_rnncov.generation.results import AdversarialSample, CampaignResult
from pytest_rnncov.reporting.baseline import baseline_text, load_baseline
from pytest_rnncov.reporting.data import VERSION as DATA_VERSION
from pytest_rnncov.reporting.data import CoverageData
from pytest_rnncov.reporting.samples import gallery_entries
from pytest_rnncov.reporting.signals import sample_signals

#: examples per format (1000 take about 7 s on two cores); set RNNCOV_FUZZ_EXAMPLES to fuzz longer
FUZZ = settings(
    max_examples=int(os.environ.get("RNNCOV_FUZZ_EXAMPLES", "1000")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# -- the valid documents, built once ----------------------------------------------------------
def _trace(rng: np.random.Generator, n: int):
    shape = (n, 7, 3)
    return make_trace(
        h=rng.normal(size=shape),
        c=rng.normal(size=shape),
        f=rng.uniform(size=shape),
        i=rng.uniform(size=shape),
        o=rng.uniform(size=shape),
    )


@functools.cache
def documents() -> dict[str, dict[str, Any]]:
    """The valid documents (JSON trees), built once: not a fixture, so that Hypothesis does
    not print them with every failing example."""
    rng = np.random.default_rng(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RNNCovWarning)
        profile = Profile(window=(1, -2), state_components=2, state_intervals=3).fit_traces(
            [_trace(rng, 20)], layer="hand", fingerprint="hand"
        )
    assert profile.states_ is not None
    test = _trace(rng, 6)
    metrics = {}
    for name in ("BC", "SC", "TC", "WT"):
        metric = make_metric(name).bind(profile, track_fitness=False)
        metric.update(Signals(test, profile.window_), np.arange(6))
        metrics[name] = metric.state_
    assert all(0 < m.n_covered < m.total for m in metrics.values())
    assert metrics["WT"].weights is not None
    state = ModelState("m", "hand", "lstm", profile.window_, "hand", 6, metrics, profile.digest())
    sample = AdversarialSample(
        3, 1, test.h[0, :, :2], test.h[1, :, :2], np.zeros(2), np.ones(2), "0", "1", 0.25
    )
    result = CampaignResult(
        test_cases=10,
        adversarial=1,
        unique=1,
        average_perturbation=0.5,
        distance="l2",
        rates={"BC": 0.8},
        covered={"BC": 4},
        totals={"BC": 5},
        coverage_times={"BC": [1]},
        minimal_suite=[0, 2],
        diversity=None,
        growth=[
            {"test_cases": 5, "phase": "random", "BC": 0.5},
            {"test_cases": 10, "phase": "targeted", "BC": 0.8},
        ],
        samples=[sample],
        oracle="decision",
        mutator="gaussian",
    )
    campaign = result.summary("m", gallery=gallery_entries(result.samples, (-3.0, 3.0))).to_json()
    data = CoverageData(
        models={"m": state},
        signals={"m": sample_signals(test, profile)},
        campaigns=[campaign],
        track_errors=["test_x: ModelError: no layer"],
        sources=["run.json"],
        runs=["0123456789abcdef"],
        stopped=["the session stopped after 1 of 3 tests (interrupted)"],
        random_tests=["test_m.py::test_drawn"],
    )
    partial = CoverageData(models={"m": state}, missing_workers=["gw1"])
    assert not partial.complete
    return {
        "data": json.loads(data.dumps()),
        "baseline": json.loads(baseline_text(partial)),
        "profile": json.loads(profile.text()),
    }


# -- edits --------------------------------------------------------------------------------------
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from(
        [
            0,
            1,
            -1,
            2,
            2**31,
            2**53 + 1,
            2**62 - 1,
            2**62,
            2**63,
            -(2**63),
            2**64,
            10**30,
            -(10**30),
            10**400,
        ]
    ),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0.0, -0.0, 0.5, 1.0, -1.0, 1e308, -1e308, 5e-324, 1e-300, 2.0**62]),
    st.text(max_size=8),
    st.sampled_from(["", "h", "lstm", "BC", "WT", "net", "é", "\u2603", "\x00", "m", "gw1"]),
)
JSON_VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)


def _children(node: Any) -> list[tuple[Any, Any]]:
    if isinstance(node, dict):
        return list(node.items())
    return list(enumerate(node)) if isinstance(node, list) else []


def _subtrees(node: Any) -> list[Any]:
    return [node] + [sub for _, child in _children(node) for sub in _subtrees(child)]


@functools.cache
def _fields(kind: str) -> dict[tuple[Any, ...], list[tuple[Any, ...]]]:
    """The paths of every node of a valid document, by field: list indices read as ``*``,
    so that each field (a metric's ``rate``, the elements of ``covered_ids``, ...) is as
    likely to be edited as any other, however long its lists."""
    out: dict[tuple[Any, ...], list[tuple[Any, ...]]] = {}
    todo: list[tuple[tuple[Any, ...], Any]] = [((), documents()[kind])]
    while todo:
        path, node = todo.pop()
        field = tuple("*" if isinstance(step, int) else step for step in path)
        out.setdefault(field, []).append(path)
        todo.extend(((*path, key), child) for key, child in _children(node))
    return out


#: optional keys the valid documents lack, to add where they do not belong (or do)
_OPTIONAL_KEYS = [
    "best_fitness",
    "weights",
    "runs",
    "stopped",
    "random_tests",
    "complete",
    "missing_workers",
    "created",
    "gallery",
    "growth",
    "clip",
    "states",
    "window_requested",
]


def _keys(kind: str) -> list[str]:
    return sorted(
        set(_OPTIONAL_KEYS)
        | {
            step
            for field in _fields(kind)
            for step in field
            if isinstance(step, str) and step != "*"
        }
    )


def _nudged(draw: Any, value: int | float) -> int | float:
    """``value`` moved by one, or by a tiny float, or to its neighbouring float."""
    steps: list[Any] = [1, -1, 1e-9, -1e-9, 0.5]
    if isinstance(value, float):
        steps += ["up", "down"]
    step = draw(st.sampled_from(steps))
    if step in ("up", "down"):
        return math.nextafter(value, math.inf if step == "up" else -math.inf)
    return value + step


def _retyped(value: Any) -> list[Any]:
    """Values like ``value`` but of another JSON type (1 -> 1.0, true, "1", [1], null...)."""
    out: list[Any] = [None, [value], {"value": value}, str(value)]
    if isinstance(value, bool):
        out += [int(value), float(value), not value]
    elif isinstance(value, int):
        out += [float(value), bool(value), -value]
    elif isinstance(value, float):
        out += [-value, bool(value)] + ([int(value)] if value.is_integer() else [])
    elif isinstance(value, list):
        out += [{}, dict(enumerate(value)), value[:1]]
    elif isinstance(value, dict):
        out += [[], list(value.values()), list(value)]
    return [v for v in out if not same(v, value)]


@st.composite
def edits(draw: Any, kind: str) -> tuple[Any, str]:
    """One random edit of the valid document ``kind`` (a copy) and a description of it."""
    document = documents()[kind]
    fields = _fields(kind)
    path = draw(st.sampled_from(fields[draw(st.sampled_from(sorted(fields, key=repr)))]))
    root = copy.deepcopy(document)
    holder: list[Any] = [root]  # the root is replaced through its holder
    parent: Any = holder
    key: Any = 0
    node: Any = root
    for key in path:
        parent, node = node, node[key]
    operations = ["replace", "retype"]
    if isinstance(parent, dict):
        operations.append("delete")
    if isinstance(node, dict):
        operations.append("add key")
    if isinstance(node, list):
        operations += ["append", "remove"] if node else ["append"]
    if isinstance(node, (int, float)) and not isinstance(node, bool):
        operations.append("nudge")
    if isinstance(node, str):
        operations.append("change text")
    operation = draw(st.sampled_from(operations))
    if operation == "replace":
        # mostly scalars (fields are mostly scalars), else containers or a part of the file
        value = draw(
            st.one_of(_SCALARS, _SCALARS, JSON_VALUES, st.sampled_from(_subtrees(document)))
        )
        parent[key] = shown = copy.deepcopy(value)
    elif operation == "retype":
        parent[key] = shown = draw(st.sampled_from(_retyped(node)))
    elif operation == "delete":
        del parent[key]
        shown = key
    elif operation == "add key":
        new = draw(st.text(max_size=8) | st.sampled_from(_keys(kind)))
        value = draw(JSON_VALUES)
        node[new] = value
        shown = (new, value)
    elif operation == "append":
        value = (
            draw(st.sampled_from(node) if node else JSON_VALUES)
            if draw(st.booleans())
            else draw(JSON_VALUES)
        )
        index = draw(st.integers(0, len(node)))
        node.insert(index, copy.deepcopy(value))
        shown = (index, value)
    elif operation == "remove":
        index = draw(st.integers(0, len(node) - 1))
        shown = node.pop(index)
    elif operation == "nudge":
        parent[key] = shown = _nudged(draw, node)
    else:
        parent[key] = shown = draw(
            st.one_of(
                st.text(min_size=1, max_size=2).map(lambda extra: node + extra),
                st.just(node[1:]),
                st.just(node.upper()),
                st.just(" " + node),
                st.text(max_size=8),
            )
        )
    event(operation)
    return holder[0], f"{operation} at {list(path)}: {shown!r}"


# -- the property ---------------------------------------------------------------------------------
def same(a: Any, b: Any) -> bool:
    """JSON equality, strictly: integers, floats and booleans apart (1, 1.0 and true differ),
    floats equal to the last bit and in the sign of zero, objects by keys (in any order) and
    lists by position."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, float) and isinstance(b, float):
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def difference(a: Any, b: Any, path: tuple[Any, ...] = ()) -> str:
    """Where ``a`` and ``b`` first differ (for failure messages)."""
    if isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys():
        for key in a:
            if not same(a[key], b[key]):
                return difference(a[key], b[key], (*path, key))
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for index, (x, y) in enumerate(zip(a, b)):
            if not same(x, y):
                return difference(x, y, (*path, index))
    if isinstance(a, dict) and isinstance(b, dict):
        return f"at {list(path)}: keys {sorted(a)} != {sorted(b)}"
    return f"at {list(path)}: {a!r} != {b!r}"


def _write(directory: Any, name: str, content: Any) -> tuple[Any, bytes]:
    path = directory / name
    raw = json.dumps(content, allow_nan=False).encode()
    path.write_bytes(raw)
    return path, raw


def _refused_or_read_back(load: Any, path: Any, error: type[RNNCovError], edit: str) -> Any:
    """The loaded object, or None when ``load`` refused the file with ``error`` naming it."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RNNCovWarning)
            return load(path)
    except RNNCovError as exc:
        assert isinstance(exc, error), f"{edit}: {type(exc).__name__}, not {error.__name__}: {exc}"
        assert str(path) in str(exc), f"{edit}: the message does not name the file: {exc}"
        event("refused")
        return None


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz")


@FUZZ
@given(data=st.data())
def test_edited_data_files_are_refused_or_read_back_exactly(folder, data):
    edited, edit = data.draw(edits("data"), label="edit")
    path, raw = _write(folder, "data.json", edited)
    loaded = _refused_or_read_back(CoverageData.load, path, DataFileError, edit)
    if loaded is None:
        return
    # the documented defaults of ``load``: a file that names no source gets its own path;
    # a file without run ids (version 1 has no 'runs' key; a later file may hold none, as
    # the payload of a worker that sent nothing does) stands for the run of its content; a
    # file before version 3 has no 'stopped' (no session of it stopped early) and no
    # 'random_tests' (no test was recorded as drawing at random), and one before version 5
    # no 'retries' (its stopped reasons of --lf and --sw, by how they begin); what is read
    # is written back in the current version
    expected = dict(edited, version=DATA_VERSION)
    expected.setdefault("stopped", [])
    expected.setdefault("random_tests", [])
    expected.setdefault(
        "retries", [s for s in expected["stopped"] if s.startswith(("--lf ", "--sw "))]
    )
    if edited.get("sources") == []:
        expected["sources"] = [str(path)]
    if edited.get("runs", []) == []:
        canonical = json.dumps(json.loads(raw), sort_keys=True, separators=(",", ":"))
        ids = [hashlib.sha256(canonical.encode()), hashlib.sha256(raw)]  # as laid out, as is
        expected["runs"] = list(dict.fromkeys(f"file-{i.hexdigest()[:16]}" for i in ids))
    again = json.loads(loaded.dumps())
    assert same(again, expected), f"{edit}: read back {difference(again, expected)}"


@FUZZ
@given(data=st.data())
def test_edited_baselines_are_refused_or_read_back_exactly(folder, data):
    edited, edit = data.draw(edits("baseline"), label="edit")
    path, _ = _write(folder, "baseline.json", edited)
    loaded = _refused_or_read_back(load_baseline, path, DataFileError, edit)
    if loaded is None:
        return
    assert loaded.path == str(path)
    again = json.loads(
        baseline_text(CoverageData(models=loaded.models, missing_workers=loaded.missing_workers))
    )
    again.pop("created")
    expected = {k: v for k, v in edited.items() if k != "created"}
    assert same(again, expected), f"{edit}: read back {difference(again, expected)}"


@FUZZ
@given(data=st.data())
def test_edited_profiles_are_refused_or_read_back_exactly(folder, data):
    edited, edit = data.draw(edits("profile"), label="edit")
    path, _ = _write(folder, "profile.json", edited)
    loaded = _refused_or_read_back(Profile.load, path, ProfileError, edit)
    if loaded is None:
        return
    again = json.loads(loaded.text())
    assert same(again, edited), f"{edit}: read back {difference(again, edited)}"


def test_the_unedited_documents_read_back_exactly(folder):
    valid = documents()
    path, _ = _write(folder, "data.json", valid["data"])
    assert same(json.loads(CoverageData.load(path).dumps()), valid["data"])
    path, _ = _write(folder, "baseline.json", valid["baseline"])
    baseline = load_baseline(path)
    assert baseline.missing_workers == ["gw1"] and not baseline.complete
    path, _ = _write(folder, "profile.json", valid["profile"])
    assert same(json.loads(Profile.load(path).text()), valid["profile"])


def test_a_decision_beyond_floats_range_is_refused_by_name(folder):
    """JSON's 1e999 reads as infinity: as a sample's decision it was accepted, and combine
    then failed writing it back (a bare ValueError: out of range float values are not JSON
    compliant)."""
    data = copy.deepcopy(documents()["data"])
    assert data["campaigns"][0]["gallery"], "the document's campaign has no sample to edit"
    data["campaigns"][0]["gallery"][0]["case_decision"] = "PLACEHOLDER"
    target = folder / "decision.json"
    target.write_text(json.dumps(data).replace('"PLACEHOLDER"', "1e999"))
    with pytest.raises(DataFileError, match="'case_decision' is inf, not a finite number"):
        CoverageData.load(target)


# -- what the fuzzing found, kept as plain examples ----------------------------------------------
DELETE = object()
_MODEL = ("models", "m")
_METRICS = (*_MODEL, "metrics")


@pytest.mark.parametrize(
    "kind, path, value, message",
    [
        # keys the reader ignored (dropped when saved again) or defaulted
        ("data", (*_MODEL, ""), None, "unknown key ''"),
        ("data", (*_METRICS, "BC", "x"), 1, "unknown key 'x'"),
        ("data", (*_METRICS, "TC", "covered"), DELETE, "missing key 'covered'"),
        ("data", (*_METRICS, "TC", "rate"), DELETE, "missing key 'rate'"),
        ("data", (*_METRICS, "WT", "weights"), None, "'weights' is null, not list .leave"),
        # redundant figures only approximately equal to what the ids give
        ("data", (*_METRICS, "BC", "rate"), math.nextafter(0.8, 1), "'rate' is 0.8000000000000002"),
        ("data", (*_METRICS, "BC", "covered"), 4.0, "'covered' is 4.0 \\(float\\)"),
        # ids out of order (the writer reorders them), numbers of the wrong type
        ("data", (*_METRICS, "TC", "covered_ids", 0), 200, "sorted without repeats"),
        ("data", (*_METRICS, "WT", "weights", 0), 10**400, "'weights' must be 25 finite floats"),
        ("data", (*_METRICS, "WT", "weights", 0), 6, "'weights' must be 25 finite floats"),
        ("data", (*_METRICS, "BC", "version"), True, "state format version True"),
        ("data", (*_MODEL, "version"), 1.0, "state format version 1.0"),
        ("data", ("version",), 2.0, "data format version 2.0"),
        ("baseline", ("version",), 3.0, "baseline version 3.0"),
        # campaign summaries: values within their bounds, not only of their types
        ("data", ("campaigns", 0, "rates", "BC"), 7.5, "rate 'BC' is 7.5, not a fraction"),
        ("data", ("campaigns", 0, "growth", 1, "BC"), 1.7e308, "rate 'BC' is 1.7e\\+308"),
        ("data", ("campaigns", 0, "growth", 0, "BC"), -0.5, "rate 'BC' is -0.5"),
        ("data", ("campaigns", 0, "failures_per_class_pair", "0->1"), -3, "not a count of its"),
        ("data", ("campaigns", 0, "failing_seeds"), 10**9, "'failing_seeds' is larger than"),
        ("data", ("campaigns", 0, "rates", "B\nC"), 0.5, "is not a name"),
        ("data", ("signals", "m", "h_net_z"), [[0.5] * 5] * 6, "at most 4 rows of 5 values"),
        ("profile", ("version",), 2.0, "profile format version 2.0"),
        ("profile", ("",), None, "unknown key ''"),
        ("profile", ("window_requested",), DELETE, "missing key 'window_requested'"),
        ("profile", ("neurons", "component"), DELETE, "neurons: missing key 'component'"),
        ("profile", ("states", "x"), [], "states: unknown key 'x'"),
        ("profile", ("states", "high", 0), False, "states.high holds False"),
        ("profile", ("neurons", "min", 0, 0), "-1.5", "neurons.min holds '-1.5'"),
        ("profile", ("signals", "c/avg", "max"), 1, "signals.c/avg: 'max' is 1 \\(int\\)"),
    ],
)
def test_edits_the_fuzzing_found_are_refused_by_name(folder, kind, path, value, message):
    edited = copy.deepcopy(documents()[kind])
    node = edited
    for key in path[:-1]:
        node = node[key]
    if value is DELETE:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    target, _ = _write(folder, f"{kind}.json", edited)
    load = {"data": CoverageData.load, "baseline": load_baseline, "profile": Profile.load}[kind]
    with pytest.raises(ProfileError if kind == "profile" else DataFileError, match=message) as info:
        load(target)
    assert str(target) in str(info.value)


def test_an_nbc_without_a_lower_bound_from_the_release_before_is_read():
    """NBC(lower=-inf) is refused now (half its conditions uncoverable), but the release
    before wrote it into data files and baselines (as lower: null): they still load."""
    rng = np.random.default_rng(0)
    h = rng.normal(size=(20, 6, 3))
    trace = make_trace(h=h, f=rng.uniform(size=h.shape))
    profile = Profile().fit_traces([trace], layer="l", fingerprint="f")
    bound = NBC(lower=-1.0).bind(profile, track_fitness=False)
    state = ModelState("m", "l", "lstm", profile.window_, "f", 0, {"NBC": bound.state_})
    content = json.loads(CoverageData(models={"m": state}, runs=["r"]).dumps())
    metric = content["models"]["m"]["metrics"]["NBC"]
    metric["config"]["lower"] = None
    metric["describe"] = "NBC(h, LB=-inf, UB=0.7)"
    loaded = CoverageData.loads(json.dumps(content)).models["m"].metrics["NBC"]
    assert loaded.config["lower"] is None and loaded.describe == "NBC(h, LB=-inf, UB=0.7)"
    metric["describe"] = "NBC(h, LB=-1, UB=0.7)"  # the description must still match
    with pytest.raises(DataFileError, match="does not match its fields"):
        CoverageData.loads(json.dumps(content))


@pytest.mark.parametrize(
    ("profile_options", "metric"),
    [
        ({}, lambda: KMNC(k=2000)),  # k beyond SBC's 1,000: KMNC has no such bound
        ({}, lambda: NBC(lower=-1e30)),  # a lower bound nothing reaches: still finite
        ({"state_components": 2, "state_intervals": 5000}, BS),  # past 4,096 intervals
        ({"state_components": 2, "state_intervals": 5000}, SBC),
    ],
    ids=["KMNC k=2000", "NBC lower=-1e30", "BS 5000 intervals", "SBC 5000 intervals"],
)
def test_what_the_constructors_accept_a_data_file_reads_back(profile_options, metric):
    """Settings the metric and Profile constructors accept write data files that the reader
    (also xdist's and combine's) takes back exactly: none is refused or changed."""
    rng = np.random.default_rng(0)
    h = rng.normal(size=(50, 6, 3))
    trace = make_trace(h=h, f=rng.uniform(size=h.shape))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RNNCovWarning)
        profile = Profile(**profile_options).fit_traces([trace], layer="l", fingerprint="f")
    bound = metric().bind(profile, track_fitness=False)
    bound.update(Signals(trace, profile.window_), np.arange(50))
    state = ModelState(
        "m", "l", "lstm", profile.window_, "f", 50, {bound.name: bound.state_}, profile.digest()
    )
    text = CoverageData(models={"m": state}, runs=["r"]).dumps()
    assert CoverageData.loads(text).dumps() == text


def test_json_that_would_parse_into_more_than_half_the_memory_is_refused_unparsed(
    folder, monkeypatch
):
    """'[]' is 2 bytes of text and 56 of Python list: a 50 MB data file of them took 1.4 GB
    to read, a file at the 512 MiB cap would have taken about 13 GB."""
    from pytest_rnncov import files

    text = json.dumps({"format": "pytest-rnncov-data", "version": 1, "x": [[]] * 100_000})
    # read on a machine of 8 MiB: its 100,002 lists and objects parse to about 9 MB
    monkeypatch.setattr(files, "physical_memory", lambda: 8 * 2**20)
    (folder / "lists.json").write_text(text)
    with pytest.raises(
        DataFileError,
        match=r"would take about 8.4 MiB once parsed \(100,002 JSON lists and objects at 56",
    ):
        CoverageData.load(folder / "lists.json")
    monkeypatch.setattr(files, "physical_memory", lambda: 64 * 2**20)
    with pytest.raises(DataFileError, match="missing key 'models'"):
        CoverageData.load(folder / "lists.json")  # parsed, then refused for its content


def test_a_containers_memory_limit_bounds_what_a_file_may_parse_into(folder, monkeypatch):
    """In a container (a CI job under Docker or Kubernetes) the machine's memory is not
    what the process may use: the cgroup's limit is, where it is lower. Limits are read
    from cgroup v2 ("max": none) and v1 (a huge number: none); unreadable ones are no
    limit."""
    from pytest_rnncov import files, validation

    machine = validation.physical_memory()
    v2, v1 = folder / "memory.max", folder / "memory.limit_in_bytes"
    monkeypatch.setattr(validation, "CGROUP_LIMITS", (str(v2), str(v1)))
    assert validation.physical_memory() == machine  # neither file exists
    v2.write_text("max\n")
    v1.write_text("9223372036854771712\n")  # cgroup v1's "no limit"
    assert validation.physical_memory() == machine
    v1.write_text("garbage\n")
    assert validation.physical_memory() == machine
    v2.write_text("16777216\n")  # a container of 16 MiB
    assert validation.physical_memory() == min(machine, 16 * 2**20)
    v1.write_text("8388608\n")  # the lower of the two counts
    assert validation.physical_memory() == min(machine, 8 * 2**20)

    # the 100,002 lists and objects parse to about 9 MB: more than half of 8 MiB
    text = json.dumps({"format": "pytest-rnncov-data", "version": 1, "x": [[]] * 100_000})
    (folder / "lists.json").write_text(text)
    monkeypatch.setattr(files, "physical_memory", validation.physical_memory)
    with pytest.raises(
        DataFileError,
        match=r"about 8.4 MiB once parsed .* more than half the 8.0 MiB this process may use",
    ):
        CoverageData.load(folder / "lists.json")
    v1.write_text("67108864\n")
    v2.write_text("max\n")  # 64 MiB: parsed, then refused for its content
    with pytest.raises(DataFileError, match="missing key 'models'"):
        CoverageData.load(folder / "lists.json")
