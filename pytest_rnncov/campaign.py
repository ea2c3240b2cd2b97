"""Coverage-guided test generation (paper Alg. 1 and Alg. 2, SPEC section 6).

A :class:`Campaign` mutates seeds at random until coverage stops growing, then runs the
genetic targeted mutation on uncovered conditions, one batched model call per batch or
generation. Results stream: ``iterate()`` yields after every model call, and ``run()``
keeps (and saves) everything found so far when interrupted.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Sequence

import numpy as np

from .coverage import Coverage
from .errors import InvalidArgument
from .images import side_by_side, write_png
from .metrics import Metric, Signals
from .mutators import Mutator, checked_mutate
from .oracle import Oracle
from .stats import angular_diversity, minimal_suite

if TYPE_CHECKING:
    from .engine import TrackedModel
    from .keras_adapter import RNNModel
    from .profile import Profile
    from .trace import Trace


#: How many adversarial samples a result carries for reports (all are saved to disk).
GALLERY = 8


@dataclass(frozen=True)
class GAConfig:
    """Targeted mutation: ``k`` parents, ``n`` offspring each, at most ``gamma`` generations."""

    k: int = 4
    n: int = 8
    gamma: int = 10

    def __post_init__(self) -> None:
        for name in ("k", "n", "gamma"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidArgument(f"GAConfig {name}={value!r} must be an integer >= 1")


@dataclass
class Step:
    """What one model call of a campaign did."""

    phase: str  # "seeds", "random" or "targeted"
    cases: int
    new_conditions: dict[str, int]
    adversarial: int
    target: str | None = None  # "TC:abcab" for a targeted generation


@dataclass
class CampaignResult:
    """Everything a campaign found; complete even when the campaign was interrupted."""

    test_cases: int
    adversarial: int
    unique: int
    average_perturbation: float | None
    distance: str
    rates: dict[str, float]
    covered: dict[str, int]
    totals: dict[str, int]
    coverage_times: dict[str, list[int]]
    minimal_suite: list[int]
    diversity: float | None
    growth: list[dict[str, Any]]
    saved_to: str | None
    interrupted: bool = False
    adversarial_ids: list[int] = field(default_factory=list)
    gallery: list[dict[str, Any]] = field(default_factory=list)

    @property
    def adversary_rate(self) -> float:
        return self.adversarial / self.test_cases if self.test_cases else 0.0

    def summary(self, model: str = "") -> dict[str, Any]:
        """The JSON-ready figures the plugin's reports show."""
        return {
            "model": model,
            "test_cases": self.test_cases,
            "adversarial": self.adversarial,
            "adversary_rate": self.adversary_rate,
            "unique": self.unique,
            "average_perturbation": self.average_perturbation,
            "distance": self.distance,
            "diversity": self.diversity,
            "rates": self.rates,
            "minimal_suite_size": len(self.minimal_suite),
            "saved_to": self.saved_to,
            "interrupted": self.interrupted,
            "growth": self.growth,
            "gallery": self.gallery,
        }


class _CaseStore:
    """All cases of a campaign, by id: a growing array, or a list of strings."""

    def __init__(self, arrays: bool) -> None:
        self.arrays = arrays
        self._list: list[Any] = []
        self._array: np.ndarray | None = None
        self.size = 0

    def extend(self, cases: Any) -> None:
        if not self.arrays:
            self._list.extend(cases)
            self.size = len(self._list)
            return
        cases = np.asarray(cases)
        if self._array is None:
            self._array = np.empty((max(1024, 2 * len(cases)),) + cases.shape[1:], cases.dtype)
        if self.size + len(cases) > len(self._array):
            grown = np.empty((2 * (self.size + len(cases)),) + self._array.shape[1:], self._array.dtype)
            grown[: self.size] = self._array[: self.size]
            self._array = grown
        self._array[self.size : self.size + len(cases)] = cases
        self.size += len(cases)

    def take(self, index: Any) -> Any:
        if self.arrays:
            assert self._array is not None
            return self._array[: self.size][np.asarray(index, np.int64)]
        return [self._list[int(i)] for i in index]

    def all(self) -> Any:
        return self._array[: self.size] if self.arrays else list(self._list)  # type: ignore[index]


class Campaign:
    """Generate test cases for one model from ``seeds`` (paper Alg. 1).

    ``model`` is a tracked model (``rnncov.track``: every generated input then feeds the
    session coverage and the run is listed in the "RNN adversarial samples" section) or an
    :class:`RNNModel` with ``profile``. The campaign stops after ``budget`` generated test
    cases, when every target metric reaches ``goal``, or when all target conditions are
    covered. ``targets`` are the metrics the GA works on (default: all of ``metrics``).
    ``seed`` defaults to the session's ``--rnn-seed`` for tracked models, else 0.
    """

    def __init__(
        self,
        model: "TrackedModel | RNNModel",
        seeds: Any,
        mutator: Mutator,
        oracle: Oracle,
        *,
        profile: "Profile | None" = None,
        metrics: Sequence[str | Metric] | None = None,
        targets: Sequence[str] | None = None,
        budget: int | None = 1000,
        goal: float | None = None,
        batch_size: int = 100,
        patience: int = 2,
        ga: GAConfig = GAConfig(),
        seed: int | None = None,
        output_dir: str | Path | None = None,
        preset: str = "paper",
        name: str | None = None,
    ) -> None:
        from .engine import TrackedModel

        if isinstance(model, TrackedModel):
            self.tracked: TrackedModel | None = model
            self.rnn = model.rnn
            profile = profile or model.profile
            metrics = metrics if metrics is not None else tuple(model.coverage.metrics)
            self.name = name or model.name
        else:
            self.tracked = None
            self.rnn = model
            if profile is None:
                raise InvalidArgument("Campaign on an RNNModel needs profile=...; or pass a tracked model")
            self.name = name or self.rnn.layer_name
        if budget is None and goal is None:
            raise InvalidArgument("give budget=... (test cases) and/or goal=... (coverage rate)")
        if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int) or budget < 1):
            raise InvalidArgument(f"budget={budget!r} must be a positive number of test cases")
        if goal is not None and not 0 <= goal <= 1:
            raise InvalidArgument(f"goal={goal!r} must be a coverage rate in [0, 1]")
        if batch_size < 1 or patience < 1:
            raise InvalidArgument("batch_size and patience must be >= 1")
        if not isinstance(mutator, Mutator):
            raise InvalidArgument(f"mutator={mutator!r} is not a pytest_rnncov Mutator")
        self.mutator = mutator
        self.oracle = oracle
        self.seeds = mutator.check_seeds(seeds)
        self.coverage = Coverage(self.rnn, profile, metrics or ("BC", "SC", "TC"), preset=preset)
        self.targets = tuple(t.upper() for t in (targets or self.coverage.metrics))
        for t in self.targets:
            self.coverage[t]  # unknown names raise here
        self.budget, self.goal = budget, goal
        self.batch_size, self.patience, self.ga = batch_size, patience, ga
        if seed is None:
            seed = self.tracked.session.seed if self.tracked is not None else 0
        self.rng = np.random.default_rng(seed)
        self.output_dir = None if output_dir is None else Path(output_dir)
        # per case (seeds first): raw case, index of its seed, model output, distance
        self._cases = _CaseStore(mutator.array_cases)
        self._seed_of = np.zeros(0, np.int64)
        self._hits: dict[str, list[np.ndarray]] = {k: [] for k in self.coverage.metrics}
        self._adversarial: list[int] = []
        self._distances: list[np.ndarray] = []
        self._outputs: list[np.ndarray] = []
        self.growth: list[dict[str, Any]] = []
        self.generated = 0
        self.interrupted = False
        self.result: CampaignResult | None = None

    # -- bookkeeping -----------------------------------------------------------------------
    @property
    def n_cases(self) -> int:
        return len(self._seed_of)

    def _case(self, index: int) -> Any:
        return self._cases.take([index])[0]

    def _evaluate(self, cases: Any, seed_index: np.ndarray, phase: str,
                  target: str | None = None) -> tuple["Trace", np.ndarray, Step]:
        x = self.mutator.encode(cases)
        outputs, trace = self.rnn.run(x)
        ids = np.arange(self.n_cases, self.n_cases + len(seed_index))
        hits: dict[str, np.ndarray] = {}
        gained = self.coverage.update_trace(trace, hits=hits)
        if self.tracked is not None:
            self.tracked._feed(trace, x)
        for key, matrix in hits.items():
            self._hits[key].append(matrix)
        self._cases.extend(cases)
        self._seed_of = np.concatenate([self._seed_of, seed_index])
        self._outputs.append(np.asarray(outputs))
        if phase == "seeds":
            self._seed_outputs = np.asarray(outputs)
            distances = np.zeros(len(seed_index))
            failed = np.zeros(len(seed_index), bool)
        else:
            self.generated += len(seed_index)
            seeds = self.mutator.take(self.seeds, seed_index)
            distances = np.asarray(self.mutator.distance(seeds, cases), np.float64)
            seed_outputs = self._seed_outputs[seed_index]
            failed = self.oracle.fails(seed_outputs, outputs, distances)
        self._distances.append(distances)
        for position in np.flatnonzero(failed):
            self._adversarial.append(int(ids[position]))
            self._save_sample(int(ids[position]), outputs[position], distances[position])
        self.growth.append({"test_cases": self.generated, "phase": phase, **self.coverage.rates()})
        return trace, ids, Step(phase, len(seed_index), gained, int(failed.sum()), target)

    # -- the loop (Alg. 1) -------------------------------------------------------------------
    def _remaining(self) -> int:
        return math.inf if self.budget is None else self.budget - self.generated  # type: ignore[return-value]

    def _done(self) -> bool:
        if self._remaining() <= 0:
            return True
        rates = [self.coverage[t].rate for t in self.targets]
        if self.goal is not None and min(rates) >= self.goal:
            return True
        return all(r >= 1.0 for r in rates)

    def iterate(self) -> Iterator[Step]:
        """Run the campaign, yielding after every model call."""
        yield self._evaluate(self.seeds, np.arange(len(self.seeds)), "seeds")[2]
        stale = 0
        tried: set[tuple[str, int]] = set()
        turn = 0
        while not self._done():
            target = None if stale < self.patience else self._pick_target(tried, turn)
            if target is None:
                step = self._random_batch()
                stale = 0 if sum(step.new_conditions[t] for t in self.targets) else stale + 1
                if stale == 0:
                    tried.clear()  # new best inputs: uncovered conditions are worth a new try
                yield step
                continue
            turn += 1
            tried.add(target)
            yield from self._targeted(*target)

    def _random_batch(self) -> Step:
        size = int(min(self.batch_size, self._remaining()))
        parents = self.rng.integers(0, self.n_cases, size=size)
        cases = checked_mutate(self.mutator, self._cases.take(parents), self.rng)
        return self._evaluate(cases, self._seed_of[parents], "random")[2]

    def _pick_target(self, tried: set[tuple[str, int]], turn: int) -> tuple[str, int] | None:
        """Round-robin over target metrics: the untried uncovered condition closest to cover."""
        for offset in range(len(self.targets)):
            key = self.targets[(turn + offset) % len(self.targets)]
            metric = self.coverage[key]
            fitness = np.where(metric.covered_ | (metric.best_input_ < 0), np.inf, metric.best_fitness_)
            for condition in np.argsort(fitness, kind="stable"):
                if not np.isfinite(fitness[condition]):
                    break
                if (key, int(condition)) not in tried:
                    return key, int(condition)
        return None

    # -- targeted mutation (Alg. 2) ------------------------------------------------------------
    def _targeted(self, key: str, condition: int) -> Iterator[Step]:
        metric = self.coverage[key]
        label = f"{key}:{metric.label(condition)}"
        population = np.array([metric.best_input_[condition]])
        fitness = np.array([metric.best_fitness_[condition]])
        for _ in range(self.ga.gamma):
            if metric.covered_[condition] or self._remaining() <= 0:
                return
            parents = population[np.argsort(fitness, kind="stable")[: self.ga.k]]
            parent_fitness = np.sort(fitness, kind="stable")[: self.ga.k]
            size = int(min(len(parents) * self.ga.n, self._remaining()))
            chosen = np.repeat(parents, self.ga.n)[:size]
            offspring = checked_mutate(self.mutator, self._cases.take(chosen), self.rng)
            trace, ids, step = self._evaluate(offspring, self._seed_of[chosen], "targeted", label)
            child_fitness = metric.fitness(Signals(trace, self.coverage.profile.window_))[:, condition]
            population = np.concatenate([parents, ids])
            fitness = np.concatenate([parent_fitness, child_fitness])
            yield step

    # -- results ---------------------------------------------------------------------------------
    def run(self) -> CampaignResult:
        """Run to the end; on an interrupt or error, keep and save what was found, then re-raise."""
        try:
            for _ in self.iterate():
                pass
        except BaseException:
            self.interrupted = True
            self.finish()
            raise
        return self.finish()

    def finish(self) -> CampaignResult:
        """Compute the statistics, save the samples, and report to the session."""
        n_seeds = len(self.seeds)
        adversarial = np.array(self._adversarial, np.int64)
        distances = np.concatenate(self._distances) if self._distances else np.zeros(0)
        outputs = np.concatenate(self._outputs) if self._outputs else np.zeros((0,))
        hits = {k: np.concatenate(v) for k, v in self._hits.items() if v}
        suite = minimal_suite(hits).tolist() if hits else []
        result = CampaignResult(
            test_cases=self.generated,
            adversarial=len(adversarial),
            unique=len(np.unique(self._seed_of[adversarial])) if len(adversarial) else 0,
            average_perturbation=float(distances[adversarial].mean()) if len(adversarial) else None,
            distance=self.mutator.distance_name,
            rates=self.coverage.rates(),
            covered={k: m.covered for k, m in self.coverage.metrics.items()},
            totals={k: m.total for k, m in self.coverage.metrics.items()},
            coverage_times={k: m.times_.tolist() for k, m in self.coverage.metrics.items()},
            minimal_suite=suite,
            diversity=self._diversity(n_seeds),
            growth=self.growth,
            saved_to=None if self.output_dir is None else str(self.output_dir),
            interrupted=self.interrupted,
            adversarial_ids=adversarial.tolist(),
            gallery=self._gallery(adversarial[:GALLERY], outputs, distances),
        )
        self.result = result
        if self.output_dir is not None:
            self._save_all(result, outputs, distances)
        if self.tracked is not None:
            self.tracked.session.campaigns.append(result.summary(self.name))
        return result

    def _gallery(self, ids: np.ndarray, outputs: np.ndarray,
                 distances: np.ndarray) -> list[dict[str, Any]]:
        """A few adversarial samples beside their seeds, JSON-ready (for reports)."""
        out: list[dict[str, Any]] = []
        for i in ids.tolist():
            seed_id = int(self._seed_of[i])
            case, seed = self._case(i), self.mutator.take(self.seeds, [seed_id])[0]
            if self.mutator.array_cases:
                case = np.round(np.asarray(case, np.float64), 4).tolist()
                seed = np.round(np.asarray(seed, np.float64), 4).tolist()
            out.append({
                "seed_index": seed_id, "seed": seed, "case": case,
                "seed_decision": self._decision(self._seed_outputs[seed_id : seed_id + 1]),
                "case_decision": self._decision(outputs[i : i + 1]),
                "distance": float(distances[i]),
                "clip": list(getattr(self.mutator, "clip", None) or []),
            })
        return out

    def _diversity(self, n_seeds: int) -> float | None:
        """Mean angular diversity of the generated cases around each seed (continuous cases)."""
        if not self.mutator.array_cases or self.n_cases <= n_seeds:
            return None
        cases = self._cases.all()[n_seeds:]
        seed_of = self._seed_of[n_seeds:]
        values = [angular_diversity(cases[seed_of == s], self.seeds[s])
                  for s in np.unique(seed_of) if (seed_of == s).sum() > 1]
        return float(np.mean(values)) if values else None

    def adversarial_cases(self) -> list[tuple[Any, Any, int]]:
        """(case, its seed, seed index) for every adversarial sample found so far."""
        return [(self._case(i), self.mutator.take(self.seeds, [self._seed_of[i]])[0],
                 int(self._seed_of[i])) for i in self._adversarial]

    # -- files ---------------------------------------------------------------------------------
    def _save_sample(self, case_id: int, output: np.ndarray, distance: float) -> None:
        """Stream one adversarial sample to disk as soon as it is found."""
        if self.output_dir is None:
            return
        self.output_dir.mkdir(parents=True, exist_ok=True)
        seed_id = int(self._seed_of[case_id])
        seed_decision = self._decision(self._seed_outputs[seed_id : seed_id + 1])
        case_decision = self._decision(np.asarray(output)[None])
        number = len(self._adversarial)
        if self.mutator.array_cases:
            case = np.asarray(self._case(case_id))
            image = np.squeeze(case)
            if image.ndim == 2:
                clip = getattr(self.mutator, "clip", None) or (float(image.min()), float(image.max()) + 1e-9)
                seed = np.squeeze(self.seeds[seed_id])
                write_png(self.output_dir / f"adv_{number:05d}_seed{seed_id}_{seed_decision}to{case_decision}.png",
                          side_by_side(seed, image, clip))
        else:
            with open(self.output_dir / "adversarial.txt", "a", encoding="utf-8") as f:
                if f.tell() == 0:
                    f.write("# seed_index\tdistance\tseed_decision\tcase_decision\tseed\tcase\n")
                f.write(f"{seed_id}\t{distance:.4g}\t{seed_decision}\t{case_decision}\t"
                        f"{self.seeds[seed_id]}\t{self._case(case_id)}\n")

    def _decision(self, outputs: np.ndarray) -> str:
        if self.oracle.task == "regression":
            return f"{float(np.ravel(outputs)[0]):.3g}"
        return str(int(self.oracle.decisions(outputs)[0]))

    def _save_all(self, result: CampaignResult, outputs: np.ndarray, distances: np.ndarray) -> None:
        self.output_dir.mkdir(parents=True, exist_ok=True)  # type: ignore[union-attr]
        out = self.output_dir
        assert out is not None
        ids = np.array(result.adversarial_ids, np.int64)
        if self.mutator.array_cases and self._outputs:
            np.savez_compressed(
                out / "adversarial.npz",
                cases=self._cases.take(ids),
                seed_index=self._seed_of[ids],
                seeds=self.seeds[self._seed_of[ids]],
                case_outputs=outputs[ids],
                seed_outputs=self._seed_outputs[self._seed_of[ids]],
                distances=distances[ids],
            )
        summary = result.summary(self.name)
        summary["oracle"] = self.oracle.describe()
        (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
