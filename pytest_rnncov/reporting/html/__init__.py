"""The self-contained HTML report (``--rnn-report=html:DIR``).

Like coverage.py's, it builds the page's data first (tables, figures as PNG bytes in
memory, gallery entries) and then renders a Jinja2 template shipped with the package
(``report.html.jinja``, ``report.css``). Plots are drawn with matplotlib
(``pip install 'pytest-rnncov[html]'``) and embedded as base64, so the page opens with no
network. Each figure is stored as a palette PNG (PALETTE colours, Pillow's optimised
encoder): about a quarter of the RGBA PNG matplotlib writes, with no visible change.
Nothing here needs memory proportional to the number of possible TC words.
"""

from __future__ import annotations

import base64
import difflib
import io
from importlib import resources
from typing import Any, Sequence

import numpy as np

from ...config.bars import percent, percent_bar
from ...core import sax
from ...core.state import MetricState, ModelState
from ...errors import MissingResource
from ...validation import cut, printable
from ..attribution import coverage_by_test, minimal_set_text
from ..data import CoverageData
from ..images import png_bytes, side_by_side, to_gray8
from ..results import Verdict
from ..terminal import campaign_note, exclusion_lines, perturbation_text, rate_text

#: TC grids are drawn up to this many words and this many rows or columns (a^(w//2) rows,
#: a^(w - w//2) columns); beyond either the report lists the most covered words.
GRID_WORDS = 4096
GRID_SIDE = 81
#: the most bars a coverage-times figure draws (more conditions are binned)
TIMES_BARS = 200
#: channels up to which a 2-D case is drawn as curves (time series) rather than an image
SERIES_CHANNELS = 12
#: the resolution figures are drawn at
DPI = 90
#: colours of a figure's palette (antialiased line plots; colour-coded figures ask for 256)
PALETTE = 128


def require_html() -> None:
    """Raise MissingResource with the install command when matplotlib or jinja2 is absent."""
    missing = []
    for module, package in (("matplotlib", "matplotlib"), ("jinja2", "jinja2"), ("PIL", "pillow")):
        try:
            __import__(module)
        except ImportError:
            missing.append(package)
    if missing:
        raise MissingResource(
            f"the HTML report needs {' and '.join(missing)}, which "
            f"{'is' if len(missing) == 1 else 'are'} not installed: "
            "pip install 'pytest-rnncov[html]'"
        )


def _uri(data: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii")


def palette_png(data: bytes, colors: int = PALETTE) -> bytes:
    """A PNG (matplotlib's RGBA) again as an optimised palette PNG of at most ``colors``
    colours (median cut, no dithering): flat colours stay exact, only antialiased edges
    may move by a few levels."""
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        rgb = image.convert("RGB")
    palette = rgb.quantize(colors=colors, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    out = io.BytesIO()
    palette.save(out, format="PNG", optimize=True)
    return out.getvalue()


def figure_png(fig: Any, colors: int = PALETTE) -> bytes:
    """``fig`` as palette PNG bytes (DPI, tight box); the figure is closed."""
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    try:
        fig.savefig(buffer, format="png", dpi=DPI, bbox_inches="tight", metadata={"Software": None})
    finally:
        plt.close(fig)
    return palette_png(buffer.getvalue(), colors)


def _figure(fig: Any, colors: int = PALETTE) -> str:
    return _uri(figure_png(fig, colors))


#: the most token pairs a sample's diff compares (difflib's matcher is quadratic); past
#: it, what lies between the common start and end is shown as deleted, then inserted
DIFF_PAIRS = 4_000_000


def _marked_diff(seed: Sequence[str], case: Sequence[str], joiner: str) -> list[dict[str, str]]:
    """The case as (kind, text) pieces against the seed: equal, del, ins."""
    seed, case = list(seed), list(case)
    start = 0
    while start < min(len(seed), len(case)) and seed[start] == case[start]:
        start += 1
    end = 0
    while end < min(len(seed), len(case)) - start and seed[-1 - end] == case[-1 - end]:
        end += 1
    a, b = seed[start : len(seed) - end], case[start : len(case) - end]
    opcodes: Sequence[tuple[str, int, int, int, int]] = (
        [("replace", 0, len(a), 0, len(b))]
        if len(a) * len(b) > DIFF_PAIRS
        else difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes()
    )
    out = [{"kind": "equal", "text": joiner.join(case[:start])}] if start else []
    for op, a1, a2, b1, b2 in opcodes:
        if op == "equal":
            out.append({"kind": "equal", "text": joiner.join(b[b1:b2])})
        if op in ("delete", "replace") and a2 > a1:
            out.append({"kind": "del", "text": joiner.join(a[a1:a2])})
        if op in ("insert", "replace") and b2 > b1:
            out.append({"kind": "ins", "text": joiner.join(b[b1:b2])})
    if end:
        out.append({"kind": "equal", "text": joiner.join(case[len(case) - end :])})
    return out


#: characters of a name or description drawn in a figure's title
TITLE_CHARS = 80


def _title(text: str) -> str:
    """``text`` for a figure's title: control characters escaped, cut to TITLE_CHARS (a
    long name made a figure wider than an image may be)."""
    return cut(printable(str(text)), TITLE_CHARS)


# -- figures ---------------------------------------------------------------------------------
def signals_plot(signals: dict[str, Any]) -> Any:
    """The figure of internal signals (a matplotlib Figure, or None with no signal): one
    panel per signal, one line per input, the inputs' legend beside the panels (outside
    every axes, so it hides no data)."""
    import matplotlib.pyplot as plt

    panels = [
        (k, t)
        for k, t in (
            ("h_net_z", r"z-normalised $\xi^h_t$ (h / net)"),
            ("f_avg_minmax", r"min-max normalised $\xi^{f,avg}_t$"),
            ("h_delta_minmax", r"min-max normalised $\Delta\xi^h_t$"),
        )
        if k in signals
    ]
    if not panels:
        return None
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3), squeeze=False)
    steps = signals["steps"]
    for ax, (key, title) in zip(axes[0], panels):
        for row, values in enumerate(signals[key]):
            ax.plot(steps, values, marker=".", label=f"input {row}")
        ax.set_title(title, fontsize=10, parse_math=True)  # the report's own notation
        ax.set_xlabel("step")
    axes[0][-1].legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=8, frameon=False)
    return fig


def signals_figure(signals: dict[str, Any]) -> str | None:
    fig = signals_plot(signals)
    return None if fig is None else _figure(fig)


def times_figure(key: str, state: MetricState) -> str:
    """Coverage times per condition (BC, SC: per window step). Above TIMES_BARS conditions
    the steps are binned, so the figure's size never follows what a file claims. Excluded
    conditions are grey, not uncovered."""
    import matplotlib.pyplot as plt

    t1, t2 = state.config["window"]
    steps = t2 - t1 + 1
    size = max(1, -(-state.total // TIMES_BARS))
    starts = np.arange(0, state.total, size)
    counted = state.counted_mask
    times = np.add.reduceat(state.times, starts)
    open_ = np.add.reduceat((~state.covered_mask & counted).astype(np.int64), starts)
    excluded = np.add.reduceat((~counted).astype(np.int64), starts) == np.diff(
        np.append(starts, state.total)
    )  # bars whose conditions are all excluded

    def step(c: int) -> str:
        return str(t1 + c % steps) + ("" if c < steps else "↓")

    labels = [
        step(s) if size == 1 else f"{step(s)}-{step(min(s + size, state.total) - 1)}"
        for s in starts.tolist()
    ]
    fig, ax = plt.subplots(figsize=(max(4.0, 0.25 * len(starts)), 2.8))
    colors = [
        "tab:grey" if out else "tab:red" if n else "tab:green" for n, out in zip(open_, excluded)
    ]
    ax.bar(range(len(starts)), times, color=colors)
    missing = np.flatnonzero((times == 0) & (open_ > 0))
    ax.scatter(missing, np.zeros(len(missing)), marker="x", color="tab:red", zorder=3)
    ax.set_xticks(range(len(starts)), labels, fontsize=7, rotation=90)
    grey = "; grey: excluded" if state.n_excluded else ""
    ax.set_xlabel(
        f"step (red x: uncovered{grey})"
        if size == 1
        else f"steps, {size} a bar (red: some uncovered; x: none covered{grey})"
    )
    ax.set_ylabel("test cases")
    ax.set_title(f"coverage times: {_title(state.describe)}", fontsize=10, parse_math=False)
    return _figure(fig)


def words_figure(state: MetricState) -> str:
    """The TC grid: rows are the first w//2 symbols, columns the rest, labelled with letters."""
    import matplotlib.pyplot as plt

    w, a = int(state.config["w"]), int(state.config["a"])
    head = w // 2
    rows, cols = a**head, a ** (w - head)
    grid = np.log1p(state.times.astype(np.float64)).reshape(rows, cols)
    fig, ax = plt.subplots(figsize=(max(4.0, cols * 0.32), max(2.2, rows * 0.3)))
    ax.imshow(np.where(grid > 0, grid, np.nan), cmap="viridis", aspect="equal")
    if state.excluded is not None:  # excluded words grey, over whatever they hold
        from matplotlib.colors import ListedColormap

        out = np.where(state.excluded.reshape(rows, cols), 1.0, np.nan)
        ax.imshow(out, cmap=ListedColormap(["#bbbbbb"]), aspect="equal")
    ax.set_facecolor("#f2dede")
    row_labels = (
        [sax.word_label(d) for d in sax.word_digits(np.arange(rows), a, head)] if head else [""]
    )
    col_labels = [sax.word_label(d) for d in sax.word_digits(np.arange(cols), a, w - head)]
    ax.set_yticks(range(rows), row_labels, fontsize=7, family="monospace")
    ax.set_xticks(range(cols), col_labels, fontsize=7, family="monospace", rotation=90)
    ax.set_ylabel(f"first {head} symbols")
    ax.set_xlabel(f"last {w - head} symbols")
    ax.set_title(
        f"{_title(state.describe)}: covered SAX words (colour: log coverage times; pink: "
        + ("uncovered; grey: excluded)" if state.n_excluded else "uncovered)"),
        fontsize=9,
        parse_math=False,
    )
    return _figure(fig, colors=256)


def top_words(state: MetricState, limit: int = 30) -> list[dict[str, Any]]:
    """The most covered TC words (from the covered ids only)."""
    ids = state.covered_ids()
    times = state.times[ids]
    order = np.argsort(-times, kind="stable")[:limit]
    w, a = int(state.config["w"]), int(state.config["a"])
    digits = sax.word_digits(ids[order], a, w)
    return [{"word": sax.word_label(d), "times": int(t)} for d, t in zip(digits, times[order])]


def growth_figure(campaign: dict[str, Any]) -> str | None:
    import matplotlib.pyplot as plt

    growth = campaign.get("growth") or []
    if not growth:
        return None
    fig, ax = plt.subplots(figsize=(6, 3))
    cases = [g["test_cases"] for g in growth]
    for key in [k for k in growth[0] if k not in ("test_cases", "phase")]:
        ax.plot(cases, [g[key] for g in growth], label=key)
    targeted = [g["test_cases"] for g in growth if g["phase"] == "targeted"]
    if targeted:
        ax.axvline(targeted[0], color="grey", linestyle="--", linewidth=1)
        ax.text(targeted[0], 0.02, " GA starts", fontsize=8, color="grey")
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("generated test cases")
    ax.set_ylabel("coverage rate")
    # beside the axes: rates often run along 1.0, where a legend inside would sit
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.set_title(
        f"coverage growth: {_title(campaign.get('model', ''))}", fontsize=10, parse_math=False
    )
    return _figure(fig)


def series_plot(seed: np.ndarray, case: np.ndarray) -> Any:
    """Seed (dashed) and case (solid) per channel (one colour a channel), for time series,
    as a matplotlib Figure with a legend beside the axes: seed, case, and the channels'
    colours when there are several."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    seed2, case2 = seed.reshape(len(seed), -1), case.reshape(len(case), -1)
    channels = seed2.shape[1]
    fig, ax = plt.subplots(figsize=(4.0, 2.4))
    colors = []
    for channel in range(channels):
        (line,) = ax.plot(case2[:, channel], linewidth=1.2)
        ax.plot(seed2[:, channel], linestyle="--", linewidth=0.9, color=line.get_color())
        colors.append(line.get_color())
    key = "0.25" if channels > 1 else colors[0]
    handles = [
        Line2D([], [], color=key, linestyle="--", linewidth=0.9, label="seed"),
        Line2D([], [], color=key, linewidth=1.2, label="case"),
    ]
    if channels > 1:
        handles += [
            Line2D([], [], color=c, linewidth=3, label=f"channel {i}") for i, c in enumerate(colors)
        ]
    ax.set_xlabel("step")
    ax.legend(
        handles=handles,
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        fontsize=7,
        frameon=False,
        handlelength=2.2,
        ncols=1 if len(handles) <= 8 else 2,
    )
    return fig


def series_figure(seed: np.ndarray, case: np.ndarray) -> str:
    """``series_plot`` as a data URI."""
    return _figure(series_plot(seed, case))


def gallery_item(item: dict[str, Any]) -> dict[str, Any]:
    caption = (
        f"seed {item['seed_index']}: {item['seed_decision']} → {item['case_decision']}, "
        f"distance {item['distance']:.3g}"
    )
    seed, case = item["seed"], item["case"]
    if isinstance(seed, str):
        joiner = " " if " " in seed else ""
        tokens = seed.split(" ") if joiner else list(seed)
        case_tokens = case.split(" ") if joiner else list(case)
        return {
            "kind": "text",
            "caption": caption,
            "seed": seed,
            "joiner": joiner,
            "pieces": _marked_diff(tokens, case_tokens, joiner),
        }
    seed_a, case_a = (
        np.squeeze(np.asarray(seed, np.float64)),
        np.squeeze(np.asarray(case, np.float64)),
    )
    if seed_a.ndim == 1 or (seed_a.ndim == 2 and seed_a.shape[1] <= SERIES_CHANNELS):
        return {
            "kind": "image",
            "caption": caption + " (seed dashed, case solid)",
            "pixels": False,
            "uri": series_figure(
                seed_a if seed_a.ndim > 1 else seed_a[:, None],
                case_a if case_a.ndim > 1 else case_a[:, None],
            ),
        }
    if seed_a.ndim == 2:
        clip = item.get("clip") or [
            float(min(seed_a.min(), case_a.min())),
            float(max(seed_a.max(), case_a.max())) + 1e-9,
        ]
        return {
            "kind": "image",
            "caption": caption + " (seed | case | difference)",
            "pixels": True,
            "uri": _uri(png_bytes(side_by_side(seed_a, case_a, (clip[0], clip[1])))),
        }
    diff = np.abs(case_a - seed_a).reshape(1, -1)
    return {
        "kind": "image",
        "caption": caption + " (|case - seed|)",
        "pixels": True,
        "uri": _uri(png_bytes(to_gray8(diff, (0.0, float(diff.max()) or 1.0)), scale=4)),
    }


# -- the page ------------------------------------------------------------------------------
#: the models, and the campaigns, a page draws figures for (a model's take about 0.4 s: a
#: file of 2,000 models took 14 minutes); the others are in its tables, with a note
FIGURED = 20


def _model_section(
    state: ModelState, signals: dict[str, Any] | None, verdict: Verdict, drawn: bool = True
) -> dict[str, Any]:
    checks = {(c.model, c.metric): c for c in verdict.checks}
    below = verdict.failed_bars()
    rows = []
    for key, m in state.metrics.items():
        check = checks.get((state.name, key))
        rows.append(
            {
                "key": key,
                "describe": m.describe,
                "covered": m.n_covered,
                "total": m.n_counted,
                "excluded": m.n_excluded,
                "rate": rate_text(m, below.get((state.name, key))),
                "bar": None if check is None else percent_bar(check.bar),
                "below": check is not None and not check.passed,
            }
        )
    figures = []
    for key, m in state.metrics.items():
        if drawn and key in ("BC", "SC") and m.total:
            figures.append(
                {"title": f"{key}: coverage times per step", "uri": times_figure(key, m)}
            )
    words = None
    tc = state.metrics.get("TC")
    if tc is not None:
        w, a = int(tc.config["w"]), int(tc.config["a"])
        if drawn and tc.total <= GRID_WORDS and a ** (w - w // 2) <= GRID_SIDE:
            figures.append({"title": "TC: SAX words", "uri": words_figure(tc)})
        else:
            words = {"total": tc.total, "covered": tc.n_covered, "top": top_words(tc)}
    return {
        "name": state.name,
        "layer": state.layer,
        "cell": state.cell,
        "window": list(state.window),
        "inputs": state.n_inputs,
        "rows": rows,
        "excluded": exclusion_lines(CoverageData(models={state.name: state})),
        "tests": _tests_section(state),
        "signals": signals_figure(signals) if signals and drawn else None,
        "figures": figures,
        "words": words,
    }


#: the tests a page lists per model, at most (the JSON report lists every one)
TESTS_SHOWN = 50


def _tests_section(state: ModelState) -> dict[str, Any] | None:
    """The recorded tests (--rnn-context=test): the minimal set, the tests that add
    nothing, and per test the conditions it covered (the first TESTS_SHOWN)."""
    summary = coverage_by_test(state)
    if summary is None:
        return None
    minimal = set(summary.minimal)
    rows = [
        {"test": test, "counts": counts, "minimal": test in minimal}
        for test, counts in list(summary.covered.items())[:TESTS_SHOWN]
    ]
    return {
        "n": len(summary.covered),
        "minimal_text": minimal_set_text(summary),
        "adds_nothing": summary.adds_nothing[:TESTS_SHOWN],
        "more_adding_nothing": max(0, len(summary.adds_nothing) - TESTS_SHOWN),
        "metrics": list(next(iter(summary.covered.values()))) if summary.covered else [],
        "rows": rows,
        "hidden": max(0, len(summary.covered) - TESTS_SHOWN),
        "unattributed": ", ".join(f"{k} {v}" for k, v in summary.unattributed.items()),
    }


def _campaign_section(campaign: dict[str, Any], drawn: bool = True) -> dict[str, Any]:
    return {
        "model": str(campaign.get("model", "")),
        "test_cases": campaign["test_cases"],
        "adversarial": campaign["adversarial"],
        "rate": percent(campaign["adversary_rate"]),
        "unique": campaign["unique"],
        "distance": str(campaign.get("distance", "")),
        "perturbation": perturbation_text(campaign),
        "saved_to": campaign.get("saved_to"),
        "note": campaign_note(campaign),
        "growth": growth_figure(campaign) if drawn else None,
        "gallery": [gallery_item(item) for item in campaign.get("gallery") or []] if drawn else [],
    }


def page_data(data: CoverageData, verdict: Verdict) -> dict[str, Any]:
    """Everything the template shows, figures already drawn."""
    from ... import __version__

    return {
        "version": __version__,
        "bars": None if verdict.bars is None else verdict.bars.describe(),
        "verdict": [{"text": t, "style": s} for t, s in verdict.lines()],
        "models": [
            _model_section(state, data.signals.get(name), verdict, drawn=index < FIGURED)
            for index, (name, state) in enumerate(data.models.items())
        ],
        "campaigns": [
            _campaign_section(c, drawn=index < FIGURED) for index, c in enumerate(data.campaigns)
        ],
        "undrawn": " and ".join(
            f"{count - FIGURED} {what}{'s' if count - FIGURED != 1 else ''}"
            for count, what in ((len(data.models), "model"), (len(data.campaigns), "campaign"))
            if count > FIGURED
        ),
        "figured": FIGURED,
        "track_errors": data.track_errors,
    }


class HtmlReport:
    """Renders ``DIR/index.html``: one self-contained page."""

    def render(self, data: CoverageData, verdict: Verdict) -> str:
        """The page's HTML (``reporting.outputs.render_reports`` renders it)."""
        require_html()
        import matplotlib

        matplotlib.use("Agg", force=True)
        import jinja2

        folder = resources.files(__name__)
        environment = jinja2.Environment(  # every value escaped: markup and control
            autoescape=True,  # characters, direction overrides included (as the terminal)
            undefined=jinja2.StrictUndefined,
            finalize=lambda value: (  # Markup is the page's own: kept as it is
                printable(value, newlines=True)
                if isinstance(value, str) and not isinstance(value, jinja2.runtime.Markup)
                else value
            ),
        )
        template = environment.from_string(folder.joinpath("report.html.jinja").read_text("utf-8"))
        # names in the figures (a model's, a campaign's) are text: "$x$" is not mathtext
        # (the report's own notation asks for it: parse_math=True)
        with matplotlib.rc_context({"text.parse_math": False}):
            page = page_data(data, verdict)
        return template.render(page=page, css=folder.joinpath("report.css").read_text("utf-8"))
