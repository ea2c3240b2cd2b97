"""Names of the metrics, defined once (no numpy: the pytest hook module reads them)."""

from __future__ import annotations

#: Every metric, in report order: testRNN's three, DeepGauge's four, DeepStellar's four.
METRIC_NAMES = ("BC", "SC", "TC", "NC", "KMNC", "NBC", "SNAC", "BS", "SBC", "BT", "WT")
#: the metrics whose rate is a weighted share of their conditions (their state has weights)
WEIGHTED_METRICS = ("WT",)

#: The metrics tracked and gated when nothing else is asked for (testRNN's).
DEFAULT_METRICS = ("BC", "SC", "TC")

#: Configuration presets: "paper" (SPEC defaults) and "testrnn" (the authors' tool).
PRESET_NAMES = ("paper", "testrnn")

#: The most coverage conditions one metric may have (its state must fit in memory).
MAX_CONDITIONS = 1 << 20

#: the tests recorded per condition with ``--rnn-context=test``: the first that covered it
TESTS_PER_CONDITION = 5
