"""Test generation: mutators and encoders, the oracle, coverage-guided campaigns (paper
Alg. 1 and 2), Hypothesis strategies, and the statistics of a generated test suite."""
