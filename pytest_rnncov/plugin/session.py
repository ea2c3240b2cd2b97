"""What the ``rnncov`` fixture hands out: the session's tracked models and their coverage.

Every input fed through a tracked model is traced once per batch; the batch's signals feed
the session coverage, the running test's coverage (for the marker) and, in a campaign,
the campaign's coverage and the GA, without being computed again.
"""

from __future__ import annotations

import difflib
import hashlib
import inspect
import os
import warnings
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..adapters.base import Adapter, refuse_overflow
from ..adapters.model import RNNModel
from ..config.paths import check_distinct
from ..config.values import parse_metrics
from ..core.abstractions import resolve_window
from ..core.coverage import Coverage, Observation
from ..core.metrics import DEFAULT_METRICS, Signals
from ..core.profile import Profile
from ..core.source import rows_from
from ..core.state import TESTS_PER_CONDITION, MetricState, ModelState
from ..core.trace import Trace, concat_traces
from ..errors import InvalidArgument, ProfileError, RNNCovWarning, StaleProfile
from ..files import as_path, folder_lock
from ..generation.campaign import Campaign, check_listeners
from ..generation.results import CampaignResult
from ..reporting.data import CoverageData, new_run_id
from ..reporting.samples import SampleWriter, gallery_entries, samples_folder
from ..reporting.signals import SIGNAL_SAMPLES, sample_signals
from ..validation import check_int, check_str, check_window, path_text
from .draws import running_draws_at_random

#: the longest model name ``track`` takes (it labels every table row, bar and report line)
MAX_MODEL_NAME = 200


class _TestCoverage:
    """The coverage of the inputs one test fed, per model (for the marker)."""

    def __init__(self) -> None:
        self.states: dict[str, dict[str, MetricState]] = {}
        self.inputs: dict[str, int] = {}

    def add(self, tracked: "TrackedModel", observation: Observation, n: int) -> None:
        states = self.states.setdefault(tracked.name, tracked.coverage.empty_states())
        for key, (_, result) in observation.items():
            states[key].add_counts(result.counts)
        self.inputs[tracked.name] = self.inputs.get(tracked.name, 0) + n

    def models(self, session: "RNNCovSession") -> dict[str, ModelState]:
        out = {}
        for name, states in self.states.items():
            base = session.models[name].coverage.state(name)
            out[name] = ModelState(
                name,
                base.layer,
                base.cell,
                base.window,
                base.fingerprint,
                self.inputs[name],
                states,
                base.profile,
            )
        return out


class _TestRecorder:
    """Which tests covered which conditions of one model (``--rnn-context=test``): per
    condition the first TESTS_PER_CONDITION tests, per test how many conditions it
    covered. Memory: conditions x TESTS_PER_CONDITION, however many tests run."""

    def __init__(self, totals: dict[str, int]) -> None:
        self.tests: list[str] = []
        self.index: dict[str, int] = {}
        self.current = -1
        self.first = {k: np.full((t, TESTS_PER_CONDITION), -1, np.int32) for k, t in totals.items()}
        self.filled = {k: np.zeros(t, np.int8) for k, t in totals.items()}
        self.counts: dict[str, dict[int, int]] = {k: {} for k in totals}
        #: the conditions the running test covered so far, per metric
        self.seen = {k: np.zeros(t, bool) for k, t in totals.items()}

    def add(self, test: str, observation: Observation) -> None:
        if test not in self.index:
            self.index[test] = len(self.tests)
            self.tests.append(test)
        t = self.index[test]
        if t != self.current:
            self._close()
            self.current = t
        for key, (_, result) in observation.items():
            hit = np.flatnonzero(result.counts)
            self.seen[key][hit] = True
            filled = self.filled[key][hit].astype(np.int64)
            listed = (self.first[key][hit] == t).any(axis=1)
            fresh = hit[(filled < TESTS_PER_CONDITION) & ~listed]
            self.first[key][fresh, self.filled[key][fresh]] = t
            self.filled[key][fresh] += 1

    def _close(self) -> None:
        """Count the conditions the test that fed last covered."""
        if self.current < 0:
            return
        for key, seen in self.seen.items():
            counts = self.counts[key]
            counts[self.current] = max(counts.get(self.current, 0), int(seen.sum()))
            seen[:] = False

    def attach(self, state: ModelState) -> ModelState:
        """``state`` with the recorded tests (the running test's count included)."""
        self._close()
        self.current = -1
        state.tests = list(self.tests)
        for key, metric in state.metrics.items():
            if key in self.first:
                metric.contexts = self.first[key].copy()
                metric.test_counts = np.array(
                    [self.counts[key].get(i, 0) for i in range(len(self.tests))], np.int64
                )
        return state


class _CampaignRecorder:
    """Registers a finished campaign's figures and gallery with the session."""

    def __init__(self, tracked: "TrackedModel") -> None:
        self.tracked = tracked

    def on_finish(self, campaign: Campaign, result: CampaignResult) -> None:
        # after the campaign's own listeners: a folder whose writing failed (it may hold an
        # earlier campaign's samples) is not named as this campaign's
        writers = [w for w in campaign.listeners if isinstance(w, SampleWriter)]
        saved = [w for w in writers if w.saved]
        failed = [w.error for w in writers if w.error is not None]
        summary = result.summary(
            campaign.name,
            saved_to=path_text(saved[0].directory) if saved else None,
            gallery=gallery_entries(result.samples, getattr(campaign.mutator, "clip", None)),
            samples_error=failed[0] if failed else None,
        )
        self.tracked.session.campaigns.append(summary.to_json())


class TrackedModel:
    """A model registered with the session: every input fed through it counts toward the
    session coverage of ``name`` (and toward the running test's, for the marker)."""

    def __init__(
        self,
        session: "RNNCovSession",
        name: str,
        rnn: Adapter,
        coverage: Coverage,
        metric_specs: Sequence[Any],
        preset: str,
    ) -> None:
        self.session = session
        self.name = name
        self.rnn = rnn
        self.coverage = coverage
        self.metric_specs = tuple(metric_specs)
        self.preset = preset
        #: the trace of the inputs the HTML report plots (the first fed, or plot_signals's)
        self._plotted: Trace | None = None
        #: which tests covered what, when the session records tests
        self.tests = (
            _TestRecorder({k: m.state_.total for k, m in coverage.metrics.items()})
            if session.record_tests
            else None
        )

    @property
    def profile(self) -> Profile:
        return self.coverage.profile

    @property
    def seed(self) -> int:
        return self.session.seed

    # -- feeding -----------------------------------------------------------------------
    def feed(
        self, signals: Signals, observation: Observation | None = None, inputs: Any = None
    ) -> dict[str, int]:
        """Add one batch of signals to the session (and the running test's) coverage;
        ``observation`` from another Coverage of this profile is reused, not recomputed;
        ``inputs``, the batch's model inputs, may give the HTML report's signal figure."""
        gained, own = self.coverage.update_signals(signals, None, reuse=observation)
        self._fed(signals, own, inputs)
        return gained

    def _fed(self, signals: Signals, observation: Observation, inputs: Any = None) -> None:
        """What else one batch added to this model's coverage feeds: the running test's
        coverage, and the first inputs the HTML report may plot (``inputs``: the batch's,
        where at hand)."""
        if self._plotted is None:
            self._plotted = self._plot_trace(signals.trace, inputs)
        test = self.session.test_coverage
        if test is not None:
            test.add(self, observation, len(signals))
        if self.tests is not None and self.session.current_test is not None:
            self.tests.add(self.session.current_test, observation)
        self.session.note_random_draws()

    def _stream(self, x: Any, keep_trace: bool) -> tuple[np.ndarray, list[Trace], dict[str, int]]:
        outputs, traces = [], []
        gained = dict.fromkeys(self.coverage.metrics, 0)
        for chunk in self.coverage.stream(x, full_trace=keep_trace, keep_inputs=False):
            assert chunk.outputs is not None
            outputs.append(chunk.outputs)
            # its states were finite: it counts
            self._fed(chunk.signals, chunk.observation, x if chunk.start == 0 else None)
            with rows_from(chunk.start):  # rows of x, not of this batch
                refuse_overflow(chunk.outputs)
            for key, value in chunk.gained.items():
                gained[key] += value
            if keep_trace:
                traces.append(chunk.trace)
        return np.concatenate(outputs), traces, gained

    def run(self, x: Any) -> tuple[np.ndarray, Trace]:
        """Outputs and trace of ``x`` from one batched model call; both feed coverage."""
        outputs, traces, _ = self._stream(x, keep_trace=True)
        return outputs, concat_traces(traces)

    def predict(self, x: Any) -> np.ndarray:
        """The model's outputs for ``x``; the inputs feed coverage (batch by batch)."""
        return self._stream(x, keep_trace=False)[0]

    def trace(self, x: Any) -> Trace:
        """The trace of ``x``; the inputs feed coverage."""
        return self.run(x)[1]

    def observe(self, x: Any) -> dict[str, int]:
        """Feed ``x`` to coverage; return how many conditions became covered per metric."""
        return self._stream(x, keep_trace=False)[2]

    def signals_of(self, x: Any) -> Signals:
        """The signals of ``x`` (fed to coverage) for scoring conditions."""
        return self.coverage.signals(self.run(x)[1])

    def _plot_trace(self, trace: Trace, inputs: Any) -> Trace:
        """The first inputs' trace for the signal figure: the fed trace's, or where that
        holds the sums of h without their positive parts (no metric reads them; the
        figure's h/delta does) and a figure is wanted, the first ``inputs`` traced again
        (they do not feed coverage again)."""
        rows = trace[:SIGNAL_SAMPLES]
        if self.session.signal_figures and inputs is not None and rows.sums_alone("h"):
            return self.rnn.trace(self.rnn.check_input(inputs[:SIGNAL_SAMPLES])).to_host()
        return rows.to_host()

    # -- beyond coverage ---------------------------------------------------------------
    def plot_signals(self, x: Any) -> None:
        """Choose the inputs (up to 4) whose internal signals the HTML report plots; by
        default, the first inputs the model saw. They do not feed coverage."""
        self._plotted = self.rnn.trace(self.rnn.check_input(x)[:SIGNAL_SAMPLES]).to_host()

    def signal_figure(self) -> dict[str, Any]:
        """The HTML report's signal figure data for the plotted inputs ({} before any)."""
        return {} if self._plotted is None else sample_signals(self._plotted, self.profile)

    def campaign_listeners(self) -> list[Any]:
        return [_CampaignRecorder(self)]

    def campaign(
        self,
        seeds: Any,
        mutator: Any,
        oracle: Any,
        *,
        output_dir: str | os.PathLike[str] | None = None,
        **options: Any,
    ) -> Campaign:
        """A :class:`~pytest_rnncov.Campaign` on this model; ``output_dir`` writes its
        adversarial samples there (``SampleWriter``)."""
        accepted = [
            name
            for name in inspect.signature(Campaign).parameters
            if name not in ("model", "seeds", "mutator", "oracle")
        ]
        for option in options:
            if option not in accepted:
                close = difflib.get_close_matches(option, accepted, n=1)
                raise InvalidArgument(
                    f"campaign() got an unknown option {option!r}"
                    + (f"; did you mean {close[0]!r}?" if close else "")
                    + f" (options: output_dir, {', '.join(accepted)})"
                )
        listeners = check_listeners(options.pop("listeners", ()))
        if output_dir is None and self.session.samples is not None:
            output_dir = samples_folder(
                self.session.samples, self.name, self.session.current_test, self.session.folders
            )
        elif output_dir is not None and self.session.samples is not None:
            warnings.warn(
                f"{self.session.samples_label}={str(self.session.samples)!r} is set, and this "
                f"campaign's output_dir={str(output_dir)!r} wins: its samples are saved there, "
                "not in that folder; drop output_dir= to keep them with the others",
                RNNCovWarning,
                stacklevel=2,
            )
        if output_dir is not None:
            listeners.append(SampleWriter(output_dir, keep_going=True))
        return Campaign(self, seeds, mutator, oracle, listeners=listeners, **options)

    def delta(self, reference: Any, suspect: Any, metrics: Sequence[Any] | None = None) -> Any:
        """:func:`~pytest_rnncov.coverage_delta` on this model and profile. Neither set feeds
        the session coverage."""
        from ..core.delta import coverage_delta

        return coverage_delta(
            self.rnn,
            self.profile,
            reference,
            suspect,
            metrics if metrics is not None else self.metric_specs,
            preset=self.preset,
        )

    def state(self) -> ModelState:
        state = self.coverage.state(self.name)
        return state if self.tests is None else self.tests.attach(state)

    def __repr__(self) -> str:
        return f"TrackedModel({self.name!r}, {self.coverage!r})"


class RNNCovSession:
    """What the ``rnncov`` fixture hands out: register models with :meth:`track`."""

    def __init__(
        self,
        seed: int = 0,
        metrics: Sequence[str] = DEFAULT_METRICS,
        signal_figures: bool = True,
        record_tests: bool = False,
        samples: Path | None = None,
        outputs: Sequence[tuple[str, Path]] = (),
        samples_label: str = "--rnn-samples",
    ) -> None:
        self.seed = check_int("seed", seed, minimum=0)
        #: the files and folders the session writes at its end, by option: a profile
        #: track() fits is not written where one of them will be
        self.outputs = tuple(outputs)
        #: where campaigns without output_dir save their samples (--rnn-samples), and how
        #: messages name that setting (or its ini key)
        self.samples, self.samples_label = samples, samples_label
        self.folders: set[Path] = set()
        #: whether each model records which tests covered its conditions
        self.record_tests = record_tests
        self.default_metrics = tuple(metrics)
        #: whether data() computes the HTML report's signal figures (an HTML report or a
        #: data file was asked for)
        self.signal_figures = signal_figures
        self.models: dict[str, TrackedModel] = {}
        self.campaigns: list[dict[str, Any]] = []
        self.track_errors: list[str] = []
        self.test_coverage: _TestCoverage | None = None
        #: the test running now (set by the plugin), for messages
        self.current_test: str | None = None
        #: whether that test is a Hypothesis test drawing its examples at random
        self.current_random = False
        #: the tests that fed inputs Hypothesis drew at random (another run draws others)
        self.random_tests: dict[str, None] = {}  # ordered, and looked up per batch fed
        #: this session's id in its data: a run is never combined twice
        self.run_id = new_run_id()
        #: the profile files track() fitted and wrote (the report names them: commit them)
        self.profiles_written: list[str] = []

    def rng(self, salt: int | str = 0) -> np.random.Generator:
        """A numpy generator derived from the session seed (``--rnn-seed``) and ``salt``
        (a number >= 0 or a string, e.g. the test's name): one stream per salt."""
        if isinstance(salt, str):
            digest = hashlib.sha256(salt.encode("utf-8", "surrogatepass")).digest()
            return np.random.default_rng([self.seed, 1, int.from_bytes(digest[:8], "little")])
        if isinstance(salt, bool) or not isinstance(salt, (int, np.integer)):
            raise InvalidArgument(
                f"salt={salt!r} ({type(salt).__name__}); pass an integer >= 0 "
                "or a string, e.g. rnncov.rng('test_accuracy')"
            )
        return np.random.default_rng([self.seed, check_int("salt", salt, minimum=0)])

    def track(
        self,
        model: Any,
        *,
        profile: Any = None,
        x_train: Any = None,
        window: Any = None,
        name: str | None = None,
        layer: str | int | None = None,
        direction: str = "forward",
        output: str | int | None = None,
        metrics: Sequence[Any] | None = None,
        preset: str = "paper",
    ) -> TrackedModel:
        """Register ``model`` (a Keras or PyTorch model, or an RNNModel) once for the session.

        ``profile`` is a fitted Profile or the path of a profile file. A path that does not
        exist yet is fitted from ``x_train`` (with ``window``) and saved there, so the next
        run loads it. Without ``profile``, ``x_train`` is required and the profile is fitted
        in memory. ``metrics`` defaults to BC, SC, TC plus any metric the gate names.
        Tracking the same name again returns the same object when everything matches and is
        refused when anything differs.
        """
        try:
            return self._track(
                model, profile, x_train, window, name, layer, direction, output, metrics, preset
            )
        except Exception as exc:  # the model's own errors too: the report says what failed
            where = f" ({self.current_test})" if self.current_test else ""
            self.track_errors.append(f"{type(exc).__name__}{where}: {exc}")
            raise

    def _track(
        self,
        model: Any,
        profile: Any,
        x_train: Any,
        window: Any,
        name: str | None,
        layer: Any,
        direction: str,
        output: Any,
        metrics: Sequence[Any] | None,
        preset: str,
    ) -> TrackedModel:
        if name is not None:
            check_str("name", name)
        if profile is not None and not isinstance(profile, (Profile, str, os.PathLike)):
            raise InvalidArgument(
                f"profile={profile!r}; pass a fitted Profile, the path of a profile file, or "
                "None (then x_train=... fits one)"
            )
        window = check_window(window)
        if isinstance(model, Adapter):
            rnn = model
        else:
            rnn = RNNModel(model, layer, direction=direction, output=output)
        key = name or rnn.name
        if len(key) > MAX_MODEL_NAME:  # every table row is padded to the longest name
            raise InvalidArgument(
                f"model name {key[:40]!r}... has {len(key):,} characters: pass name= of at "
                f"most {MAX_MODEL_NAME} (it labels every table row, bar and report line)"
            )
        if any(c in key for c in ":,*") or not key.isprintable() or key != key.strip():
            raise InvalidArgument(
                f"model name {key!r} cannot appear in a bar (MODEL:METRIC:BAR): pass name= "
                "without ':', ',', '*', control characters or surrounding spaces"
            )
        if isinstance(metrics, str):  # "TC" or "BC,TC", not the letters of a name
            metrics = parse_metrics(metrics)
        specs = tuple(metrics) if metrics is not None else self.default_metrics
        if key in self.models:
            tracked = self.models[key]
            differ = [
                what
                for what, same in (
                    ("model object", tracked.rnn.model is rnn.model),
                    ("layer", tracked.rnn.layer_name == rnn.layer_name),
                    (
                        "set of weights (they changed since it was tracked: track the "
                        "trained model under another name)",
                        tracked.rnn.model is not rnn.model
                        or tracked.rnn.layer_name != rnn.layer_name
                        or tracked.rnn.fingerprint() == rnn.fingerprint(),
                    ),
                    ("metrics", tracked.metric_specs == specs),
                    ("preset", tracked.preset == preset),
                    (
                        "window",
                        window is None
                        or resolve_window(window, tracked.profile.n_steps_)
                        == tuple(tracked.profile.window_),
                    ),
                    ("profile", not isinstance(profile, Profile) or profile is tracked.profile),
                )
                if not same
            ]
            if not differ:
                return tracked
            hint = (
                " (a fixture narrower than the session, function-, class- or module-scoped, "
                "builds a new model each time it runs: track it in a fixture with "
                "scope='session')"
                if differ[0] == "model object"
                else ""
            )
            raise InvalidArgument(
                f"a model named {key!r} is already tracked with another "
                f"{', '.join(differ)}{hint}; track the same one, or pass another name= to "
                "track()"
            )
        fitted = self._profile(rnn, profile, x_train, window)
        coverage = Coverage(rnn, fitted, specs, preset=preset, track_fitness=False)
        self.models[key] = TrackedModel(self, key, rnn, coverage, specs, preset)
        return self.models[key]

    def _profile(self, rnn: Adapter, profile: Any, x_train: Any, window: Any) -> Profile:
        if isinstance(profile, Profile):
            return profile
        if profile is None:
            if x_train is None:
                raise InvalidArgument(
                    "track() needs a profile: pass profile=Profile or a profile file path, "
                    "or x_train=... to fit one"
                )
            worker = os.environ.get("PYTEST_XDIST_WORKER")
            if worker:
                warnings.warn(
                    RNNCovWarning(
                        f"xdist worker {worker} fits its own profile from x_train: workers whose "
                        "x_train differs (unseeded data) measure against different profiles and "
                        "their coverage cannot be combined; give track() a profile file path "
                        "(fitted once, then shared) or draw x_train with rnncov.rng()"
                    ),
                    stacklevel=4,
                )
            return Profile(window=window).fit(rnn, x_train)
        path = as_path(profile, "profile")
        # read or written, a profile is no output's file: the output would replace it
        check_distinct([*self.outputs, ("track(profile=...)", path)])
        if not path.exists():
            if x_train is None:
                raise ProfileError(
                    f"no profile file at {str(path)!r}; pass x_train=... to fit and save it there"
                )
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise ProfileError(
                    f"cannot create the folder of profile {str(path)!r}: {exc.strerror or exc}"
                ) from None
            with folder_lock(path.parent):  # one process fits; the others load its file
                if not path.exists():
                    fitted = Profile(window=window).fit(rnn, x_train)
                    fitted.save(path)
                    self.profiles_written.append(str(path))
                    return fitted
        loaded = Profile.load(path)
        if window is not None and resolve_window(window, loaded.n_steps_) != tuple(loaded.window_):
            raise StaleProfile(
                f"profile {str(path)!r} was fitted for window {list(loaded.window_)}, not "
                f"{list(window)}; if it belongs to another model, give this model its own "
                "profile path; else delete the file so that track() refits it from x_train"
            )
        loaded.check(rnn)
        return loaded

    def note_random_draws(self) -> None:
        """Record that the running test fed inputs Hypothesis drew at random: the test is a
        ``@given`` test drawing at random (``current_random``), or the inputs are fed while
        Hypothesis runs a test that drew its seed at random (a ``@given`` function the test
        calls, ``find()``, a state machine)."""
        test = self.current_test
        if test is None or test in self.random_tests:
            return
        if self.current_random or running_draws_at_random():
            self.random_tests[test] = None

    # -- per-test coverage (for @pytest.mark.rnn_coverage) -------------------------------
    def start_test(self) -> None:
        self.test_coverage = _TestCoverage()

    def stop_test(self) -> dict[str, ModelState]:
        test, self.test_coverage = self.test_coverage, None
        return {} if test is None else test.models(self)

    # -- data --------------------------------------------------------------------------
    def data_mark(self) -> tuple[Any, ...]:
        """A value that changes whenever :meth:`data` would: inputs fed, models tracked,
        campaigns run, tracking errors, tests that drew at random."""
        return (
            tuple((name, t.coverage.n_inputs_) for name, t in self.models.items()),
            len(self.campaigns),
            len(self.track_errors),
            len(self.random_tests),
        )

    def data(self) -> CoverageData:
        """This process's coverage, campaigns and tracking errors."""
        return CoverageData(
            models={name: t.state() for name, t in self.models.items()},
            signals={
                name: figure
                for name, t in self.models.items()
                for figure in [t.signal_figure() if self.signal_figures else {}]
                if figure
            },
            campaigns=list(self.campaigns),
            track_errors=list(self.track_errors),
            runs=[self.run_id],
            random_tests=list(self.random_tests),
        )
