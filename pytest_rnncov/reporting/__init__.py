"""Reporting: the run's data (``CoverageData``), the verdict computed once (``results``),
and reporters that only render them (terminal, JSON, HTML), plus baselines and the files
a campaign writes."""
