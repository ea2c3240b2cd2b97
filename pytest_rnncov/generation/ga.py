"""The genetic targeted mutation (paper Alg. 2), one generation at a time.

Campaigns (a population of case ids, offspring scored by one batched model call that also
feeds coverage) and the Hypothesis strategies (a population of cases, scored by a fitness
function) breed with the same :func:`evolve`: keep the ``k`` fittest (lowest fitness),
give each ``n`` offspring, score them, repeat for at most ``gamma`` generations.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator

import numpy as np

from ..errors import InvalidArgument
from ..validation import check_int

#: the most inputs one generation of targeted mutation may breed (k * n)
MAX_GENERATION = 1 << 16


@dataclass(frozen=True)
class GAConfig:
    """Targeted mutation: ``k`` parents, ``n`` offspring each, at most ``gamma`` generations."""

    k: int = 4
    n: int = 8
    gamma: int = 10

    def __post_init__(self) -> None:
        check_int("GAConfig k", self.k, minimum=1, maximum=4096, example="4")
        check_int("GAConfig n", self.n, minimum=1, maximum=4096, example="8")
        check_int("GAConfig gamma", self.gamma, minimum=1, maximum=100_000, example="10")
        if self.k * self.n > MAX_GENERATION:
            raise InvalidArgument(
                f"GAConfig k={self.k} parents x n={self.n} offspring is {self.k * self.n:,} "
                f"inputs per generation, more than {MAX_GENERATION:,}; lower k or n"
            )


#: ``breed(parents)``: one offspring per row of ``parents`` (each parent repeated ``n``
#: times) and their fitness, or None when nothing could be bred
Breed = Callable[[Any], "tuple[Any, np.ndarray] | None"]


def evolve(
    population: Any,
    fitness: np.ndarray,
    ga: GAConfig,
    breed: Breed,
    take: Callable[[Any, np.ndarray], Any],
    concat: Callable[[list[Any]], Any],
    room: Callable[[], float] | None = None,
    generations: int | None = None,
) -> Iterator[tuple[Any, np.ndarray]]:
    """Breed up to ``generations`` (default ``ga.gamma``) generations from ``population``.

    Each keeps the ``ga.k`` members of lowest fitness and adds ``ga.n`` offspring of each
    (at most ``room()`` of them when given: a campaign's remaining budget). Yields the new
    (population, fitness) after every generation; the caller stops early by leaving the
    loop (a condition reached, a budget spent).
    """
    for _ in range(ga.gamma if generations is None else generations):
        order = np.argsort(fitness, kind="stable")[: ga.k]
        parents = take(population, order)
        size = len(order) * ga.n if room is None else int(min(len(order) * ga.n, room()))
        if size < 1:
            return
        bred = breed(take(parents, np.arange(size) // ga.n))
        if bred is None:
            return
        offspring, scores = bred
        population = concat([parents, offspring])
        fitness = np.concatenate([fitness[order], scores])
        yield population, fitness
