"""Hypothesis strategies whose examples are mutants of seeds (random or GA-targeted).

Every example is a pure function of Hypothesis's draws (seed index, condition, number of
generations or rounds, an integer rng seed), so a failing example shrinks toward its seed
(zero generations is the seed itself) and, under settings with an example database,
replays from it (``model_settings`` is derandomized: it runs the same examples every time
and keeps no database).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np
from hypothesis import HealthCheck, note, settings, target
from hypothesis import strategies as st

from ..core.names import METRIC_NAMES
from ..errors import InvalidArgument
from ..validation import check_int, shown
from .campaign import TrackedLike
from .ga import GAConfig, evolve
from .mutators import Mutator, checked_distance, checked_mutate
from .oracle import Oracle

#: the most rounds of mutation ``random_mutants`` draws (each round is one mutate call)
MAX_ROUNDS = 1000

#: Settings for tests that call models: derandomized (the same examples every run, so the
#: coverage they feed and the gate repeat on a retry), no deadline, slow-data health checks
#: off. Other settings come from the Hypothesis profile loaded when this module is imported.
model_settings = settings(
    derandomize=True,
    deadline=None,
    max_examples=25,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
    ],
)
settings.register_profile("rnncov", model_settings)


@dataclass(frozen=True, repr=False)
class Mutant:
    """A generated test case and the seed it came from. Shown (also in a falsifying
    example) with arrays by their dtype and shape: the example's note says how it was made,
    and Hypothesis runs it again (derandomized settings draw the same examples every run)."""

    case: Any
    seed: Any
    seed_index: int
    generations: int
    target: str | None = None  # "TC:abcab" for targeted mutants
    fitness: float | None = None  # best fitness reached for the target (<= 0: covered)

    def __repr__(self) -> str:
        return (
            f"Mutant(case={_brief(self.case)}, seed={_brief(self.seed)}, "
            f"seed_index={self.seed_index}, generations={self.generations}, "
            f"target={self.target!r}, fitness={self.fitness!r})"
        )

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """How Hypothesis prints it (its printer lists a dataclass's fields otherwise)."""
        printer.text(repr(self))


#: the longest text of a case or seed a Mutant's repr shows
SHOWN_TEXT = 120


def _brief(value: Any) -> str:
    """An array as its dtype and shape; anything else as its repr, cut to SHOWN_TEXT."""
    if isinstance(value, np.ndarray):
        return f"<{value.dtype} array {value.shape}>"
    text = repr(value)
    return text if len(text) <= SHOWN_TEXT else f"{text[: SHOWN_TEXT - 3]}..."


def _prepared(
    mutator: Mutator, strategy: st.SearchStrategy[Mutant], call: str
) -> st.SearchStrategy[Mutant]:
    """``strategy``, its ``mutator.prepare()`` run when Hypothesis validates it, before the
    test's first draw: EDAMutator's WordNet load (2 s) was timed as a draw and failed the
    too_slow health check in whichever test of a process drew first. Its repr is ``call``
    (Hypothesis shows it; it read ``deferred(warmed)``)."""

    def warmed() -> st.SearchStrategy[Mutant]:
        mutator.prepare()
        return strategy

    warmed.__name__ = warmed.__qualname__ = call  # deferred's repr names its function
    return st.deferred(warmed)


def random_mutants(
    seeds: Any, mutator: Mutator, *, max_rounds: int = 3
) -> st.SearchStrategy[Mutant]:
    """Mutants of ``seeds`` after 0..``max_rounds`` rounds of ``mutator`` (no model calls)."""
    if not isinstance(mutator, Mutator):
        raise InvalidArgument(f"mutator={mutator!r} is not a pytest_rnncov Mutator")
    seeds = mutator.check_seeds(seeds)
    max_rounds = check_int("max_rounds", max_rounds, minimum=0, maximum=MAX_ROUNDS, example="3")
    describe = mutator.describe()

    @st.composite
    def build(draw: Any) -> Mutant:
        index = draw(st.integers(0, len(seeds) - 1))
        rounds = draw(st.integers(0, max_rounds))
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        case = mutator.take(seeds, [index])
        for _ in range(rounds):
            case = checked_mutate(mutator, case, rng)
        note(f"seed {index} after {rounds} rounds of {describe}")
        return Mutant(case[0], mutator.take(seeds, [index])[0], index, rounds)

    call = f"random_mutants({_brief(seeds)}, {type(mutator).__name__}, max_rounds={max_rounds})"
    return _prepared(mutator, build(), call)


#: where a strategy given a model's name finds the running session's tracked models (the
#: plugin sets it when the session's ``rnncov`` engine starts, and clears it at the end)
_session_models: Callable[[], Mapping[str, TrackedLike]] | None = None


def use_session_models(models: Callable[[], Mapping[str, TrackedLike]] | None) -> None:
    """Let strategies resolve model names from ``models()`` (None: no session)."""
    global _session_models
    _session_models = models


def _tracked(name: str) -> TrackedLike:
    """The session's tracked model ``name``, when an example is drawn (a test that pytest
    runs before any model was tracked: none is tracked yet)."""
    models = {} if _session_models is None else dict(_session_models())
    if name in models:
        return models[name]
    if _session_models is None and "PYTEST_CURRENT_TEST" not in os.environ:
        raise InvalidArgument(
            f"targeted_mutants({name!r}, ...) draws from the model tracked under that name "
            "in the running pytest session, and none is running here; use it in a test run "
            "by pytest, or pass the tracked model itself"
        )
    known = ", ".join(map(repr, models)) or "none yet"
    raise InvalidArgument(
        f"no model named {name!r} is tracked in this session (tracked: {known}); the test "
        f"must request the fixture that calls rnncov.track(..., name={name!r}), e.g. "
        "def test_robust(classifier, case): ..."
    )


#: draws of targeted mutants per test case whose fitness ``hypothesis.target`` reports (each
#: under a label of its own); later draws in the same test case are noted, not targeted
MAX_TARGET_LABELS = 64


def _target(observation: float, label: str) -> None:
    """``hypothesis.target(observation, label)``; where this test case already reported
    one under ``label`` (a test drawing from the strategy twice), under ``label (2)``,
    ``label (3)``, ... (Hypothesis refuses a label twice in one test case)."""
    from hypothesis.errors import InvalidArgument as HypothesisInvalidArgument

    for k in range(1, MAX_TARGET_LABELS + 1):
        try:
            target(observation, label=label if k == 1 else f"{label} ({k})")
            return
        except HypothesisInvalidArgument as exc:
            if "would overwrite" not in str(exc):
                raise
    note(f"{label}: not targeted, more than {MAX_TARGET_LABELS} draws in this test case")


def targeted_mutants(
    model: TrackedLike | str,
    seeds: Any,
    mutator: Mutator,
    *,
    metric: str = "TC",
    ga: GAConfig = GAConfig(k=2, n=4, gamma=3),
    oracle: Oracle | None = None,
) -> st.SearchStrategy[Mutant]:
    """Mutants bred by the GA targeted mutation (paper Alg. 2) toward one condition, or
    toward failing ``oracle`` with ``metric="failure"``.

    ``model`` is a tracked model or its name in the running session (``rnncov.track(...,
    name="mnist")``), resolved when examples are drawn, so the strategy can be written in
    ``@given(...)`` on the test. Hypothesis draws the seed, the condition of ``metric`` to
    aim at, how many generations (0..gamma) to run and an rng seed. Each generation is one
    batched call of the tracked model (so the session coverage sees every bred input). The
    example's best fitness is reported with ``hypothesis.target`` so Hypothesis steers
    toward uncovered behaviour (or, for failures, toward the oracle's boundary: fitness
    <= 0 fails it).
    """
    if not isinstance(model, (TrackedLike, str)) or model == "":
        raise InvalidArgument(
            f"model={model!r}; pass a tracked model (rnncov.track(model, ...)) or its name"
        )
    if not isinstance(metric, str) or not metric:
        raise InvalidArgument(
            f"metric={metric!r}; pass a metric's name ('TC', 'BC', ...), or 'failure' with "
            "oracle=Oracle(...)"
        )
    if not isinstance(mutator, Mutator):
        raise InvalidArgument(f"mutator={mutator!r} is not a pytest_rnncov Mutator")
    if not isinstance(ga, GAConfig):
        raise InvalidArgument(f"ga={ga!r}; pass GAConfig(k=..., n=..., gamma=...)")
    seeds = mutator.check_seeds(seeds)
    failure = metric.lower() == "failure"
    if failure and not isinstance(oracle, Oracle):
        given = "" if oracle is None else f", not oracle={shown(oracle)} ({type(oracle).__name__})"
        raise InvalidArgument(
            f"metric='failure' needs the oracle to fail: pass oracle=Oracle(...){given}"
        )
    if not failure and metric.upper() not in METRIC_NAMES:
        raise InvalidArgument(
            f"metric={metric!r} is no metric's name ({', '.join(METRIC_NAMES)}); pass one "
            "the model tracks, or 'failure' with oracle=Oracle(...)"
        )
    if not failure and oracle is not None:
        raise InvalidArgument(
            f"oracle= is read only with metric='failure' (breeding toward failing it), not "
            f"with metric={metric!r}; drop oracle=, or pass metric='failure'"
        )
    call = (
        f"targeted_mutants({_brief(model if isinstance(model, str) else model.name)}, "
        f"{_brief(seeds)}, {type(mutator).__name__}, metric={metric!r})"
    )
    if isinstance(model, str):
        name = model

        @st.composite
        def named(draw: Any) -> Mutant:
            return draw(_targeted(_tracked(name), seeds, mutator, metric, ga, oracle))

        return _prepared(mutator, named(), call)
    return _prepared(mutator, _targeted(model, seeds, mutator, metric, ga, oracle), call)


def _targeted(
    model: TrackedLike,
    seeds: Any,
    mutator: Mutator,
    metric: str,
    ga: GAConfig,
    oracle: Oracle | None,
) -> st.SearchStrategy[Mutant]:
    """``targeted_mutants``' strategy on a tracked model, its arguments checked."""
    if metric.lower() == "failure":
        assert oracle is not None
        return _failure_mutants(model, seeds, mutator, ga, oracle)
    try:
        scorer = model.coverage[metric]
    except InvalidArgument as exc:
        raise InvalidArgument(f"targeted_mutants(..., metric={metric!r}): {exc}") from None

    def coverage_fitness(seed: Any, condition: int) -> Callable[[Any], np.ndarray]:
        def fitness(cases: Any) -> np.ndarray:
            return scorer.condition_fitness(model.signals_of(mutator.encode(cases)), condition)

        return fitness

    return _bred(
        seeds,
        mutator,
        ga,
        scorer.total,
        lambda c: f"{metric}:{scorer.label(c)}",
        coverage_fitness,
        "covers it",
    )


def _failure_mutants(
    model: TrackedLike, seeds: Any, mutator: Mutator, ga: GAConfig, oracle: Oracle
) -> st.SearchStrategy[Mutant]:
    """The GA toward failing ``oracle``: fitness = oracle.failure_fitness (<= 0 fails)."""

    def failure_fitness(seed: Any, condition: int) -> Callable[[Any], np.ndarray]:
        seed_output = model.predict(mutator.encode(seed))

        def fitness(cases: Any) -> np.ndarray:
            outputs = model.predict(mutator.encode(cases))
            distances = checked_distance(
                mutator, mutator.take(seed, np.zeros(len(outputs), int)), cases
            )
            return oracle.failure_fitness(
                np.repeat(seed_output, len(outputs), axis=0), outputs, distances
            )

        return fitness

    return _bred(seeds, mutator, ga, 1, lambda c: "failure", failure_fitness, "fails the oracle")


def _bred(
    seeds: Any,
    mutator: Mutator,
    ga: GAConfig,
    conditions: int,
    label_of: Callable[[int], str],
    fitness_for: Callable[[Any, int], Callable[[Any], np.ndarray]],
    reached: str,
) -> st.SearchStrategy[Mutant]:
    """Mutants bred by the GA (paper Alg. 2) from a drawn seed toward a drawn condition.

    Hypothesis draws the seed, the condition (when there is more than one), the number of
    generations (0..gamma) and an rng seed, so every example is a pure function of the
    draws; ``fitness_for(seed, condition)`` scores a batch of cases (<= 0: reached).
    """

    @st.composite
    def build(draw: Any) -> Mutant:
        index = draw(st.integers(0, len(seeds) - 1))
        condition = draw(st.integers(0, conditions - 1)) if conditions > 1 else 0
        generations = draw(st.integers(0, ga.gamma))
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        seed = mutator.take(seeds, [index])
        label = label_of(condition)
        if generations == 0:
            note(f"seed {index} unchanged (0 generations toward {label})")
            return Mutant(seed[0], seed[0], index, 0, label)
        fitness = fitness_for(seed, condition)
        population, scores = seed, fitness(seed)
        path = [f"{float(scores[0]):.4g}"]

        def breed(parents: Any) -> tuple[Any, np.ndarray]:
            offspring = checked_mutate(mutator, parents, rng)
            return offspring, fitness(offspring)

        for population, scores in evolve(
            population, scores, ga, breed, mutator.take, mutator.concat, generations=generations
        ):
            path.append(f"{float(scores.min()):.4g}")
            if (scores <= 0).any():
                break
        best = int(np.argmin(scores))
        note(
            f"seed {index}, bred toward {label} for {len(path) - 1} "
            f"generation{'' if len(path) == 2 else 's'} "
            f"(best fitness per generation: {' -> '.join(path)}; <= 0 {reached})"
        )
        if math.isfinite(float(scores[best])):  # Hypothesis takes finite observations only
            _target(0.0 - float(scores[best]), f"-fitness {label.split(':')[0]}")  # not -0.0
        return Mutant(
            mutator.take(population, [best])[0],
            seed[0],
            index,
            len(path) - 1,  # the generations run (fewer than drawn when one reached it)
            label,
            float(scores[best]),
        )

    return build()
