"""The HTML report: every plot embedded and decodable, text diffs marked, and a clear
message without matplotlib."""

from __future__ import annotations

import base64
import io
import re
from html.parser import HTMLParser

import keras  # noqa: F401  (loaded once: pytester's in-process runs must not re-import TF)
import numpy as np
import pytest
from test_plugin import CONFTEST

from pytest_rnncov import CoverageData, MetricState, ModelState
from pytest_rnncov.reporting.html import HtmlReport, gallery_item, series_plot, signals_plot
from pytest_rnncov.reporting.images import png_bytes, side_by_side, to_gray8
from pytest_rnncov.reporting.results import evaluate

#: the page of test_every_plot_is_embedded_and_decodes weighed 378 kB while figures were
#: RGBA PNGs, 128 kB as palette PNGs (bench/bench_html.py weighs a two-model page)
PAGE_BYTES = 200_000

HTML_TESTS = """
from conftest import inputs
from pytest_rnncov import GaussianMutator, Oracle


def test_generate(tiny, rnncov):
    tiny.predict(inputs(1, n=32))
    seeds = rnncov.rng().normal(size=(8, 6, 2)).astype("float32")
    result = tiny.campaign(seeds, GaussianMutator(variance=(2.0, 4.0), clip=None),
                           Oracle(radius=None), budget=200, patience=1).run()
    assert result.adversarial > 0
"""


class Images(HTMLParser):
    def __init__(self):
        super().__init__()
        self.images: list[dict[str, str]] = []

    def handle_starttag(self, tag, attrs):
        if tag == "img":
            self.images.append(dict(attrs))


def test_every_plot_is_embedded_and_decodes(pytester):
    import matplotlib.pyplot as plt

    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_html_run=HTML_TESTS)
    result = pytester.runpytest("--rnn-report=html:report", "--rnn-report=term")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["RNN coverage HTML written to report/index.html"])
    page = (pytester.path / "report" / "index.html").read_text()
    parser = Images()
    parser.feed(page)
    alts = [image["alt"] for image in parser.images]
    # signals, BC and SC coverage times, TC words, campaign growth, adversarial samples
    for expected in (
        "signals",
        "BC: coverage times per step",
        "SC: coverage times per step",
        "TC: SAX words",
        "coverage growth",
    ):
        assert expected in alts
    assert sum(alt.startswith("seed ") for alt in alts) >= 1
    for image in parser.images:
        assert image["src"].startswith("data:image/png;base64,")
        data = base64.b64decode(image["src"].split(",", 1)[1])
        pixels = plt.imread(io.BytesIO(data), format="png")
        assert pixels.ndim >= 2 and pixels.shape[0] > 4 and pixels.shape[1] > 4
    assert "http://" not in page and "https://" not in page  # opens with no network
    print(f"page weight: {len(page.encode())} bytes")
    assert len(page.encode()) < PAGE_BYTES


def render(tmp_path, gallery=(), models=None):
    campaign = {
        "model": "m",
        "test_cases": 10,
        "adversarial": len(gallery),
        "adversary_rate": 0.1,
        "unique": 1,
        "distance": "L2",
        "growth": [],
        "gallery": list(gallery),
    }
    data = CoverageData(models=models or {}, campaigns=[campaign])
    return HtmlReport().render(data, evaluate(data, None))


def test_text_gallery_marks_the_changes(tmp_path):
    item = {
        "seed_index": 3,
        "seed": "a fine movie <b>",
        "case": "a fine moving picture <b>",
        "seed_decision": "1",
        "case_decision": "0",
        "distance": 0.5,
        "clip": [],
    }
    page = render(tmp_path, [item, dict(item, seed="CCO", case="OCC")])
    assert "<del>movie</del> <ins>moving picture</ins>" in page
    assert "&lt;b&gt;" in page and "<b>" not in page  # text is escaped
    assert "<del>CC</del>O<ins>CC</ins>" in page or "<ins>" in page.split("CCO")[-1]


def test_direction_overrides_and_control_characters_are_shown_escaped(tmp_path):
    """A name or sample text holding U+202E (right-to-left override) reversed what the page
    showed after it (the window and input count), and the terminal escaped it already;
    every value on the page is now shown as the terminal shows it."""
    item = {
        "seed_index": 0,
        "seed": "fine \u202emovie",
        "case": "fine \u202emoving\x1b[31m picture",
        "seed_decision": "1",
        "case_decision": "0\u2066",
        "distance": 0.5,
        "clip": [],
    }
    page = render(tmp_path, [item])
    assert not re.search("[\u202a-\u202e\u2066-\u2069\x1b]", page)
    assert "\\u202emovie" in page and "\\x1b[31m" in page and "0\\u2066" in page


def test_time_series_samples_are_drawn_as_curves(tmp_path):
    seed = np.sin(np.linspace(0, 6, 40))[:, None].tolist()
    case = (np.sin(np.linspace(0, 6, 40)) + 0.3)[:, None].tolist()
    item = {
        "seed_index": 0,
        "seed": seed,
        "case": case,
        "seed_decision": "1",
        "case_decision": "2",
        "distance": 1.9,
        "clip": [],
    }
    page = render(tmp_path, [item])
    assert "(seed dashed, case solid)" in page


def legend_and_axes(fig):
    """The figure's one legend's box and every axes' box, in display pixels."""
    renderer = fig.canvas.get_renderer()
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    legends += list(fig.legends)
    assert len(legends) == 1
    box = legends[0].get_window_extent(renderer)
    return legends[0], box, [ax.get_window_extent(renderer) for ax in fig.axes]


def test_time_series_figure_has_a_legend_for_seed_and_case():
    import matplotlib.pyplot as plt

    steps = np.linspace(0, 6, 30)
    seed = np.stack([np.sin(steps), np.cos(steps), steps / 6], axis=1)
    fig = series_plot(seed, seed + 0.2)
    try:
        legend, box, axes = legend_and_axes(fig)
        labels = [text.get_text() for text in legend.get_texts()]
        assert labels == ["seed", "case", "channel 0", "channel 1", "channel 2"]
        styles = [handle.get_linestyle() for handle in legend.legend_handles[:2]]
        assert styles == ["--", "-"]  # as the curves: seed dashed, case solid
        assert not any(box.overlaps(ax) for ax in axes)  # beside the curves
    finally:
        plt.close(fig)
    fig = series_plot(seed[:, :1], seed[:, :1] + 0.2)  # one channel: no channel key
    try:
        legend, _, _ = legend_and_axes(fig)
        assert [text.get_text() for text in legend.get_texts()] == ["seed", "case"]
    finally:
        plt.close(fig)


def test_signal_legend_is_outside_every_panel():
    import matplotlib.pyplot as plt

    rng = np.random.default_rng(0)
    signals = {
        "steps": [1, 2, 3, 4, 5],
        "h_net_z": rng.normal(size=(4, 5)).tolist(),
        "f_avg_minmax": rng.uniform(size=(4, 5)).tolist(),
        "h_delta_minmax": rng.uniform(size=(4, 5)).tolist(),
    }
    import matplotlib

    with matplotlib.rc_context({"text.parse_math": False}):  # as the report draws
        fig = signals_plot(signals)
    try:
        legend, box, axes = legend_and_axes(fig)
        assert len(axes) == 3
        # the panels' titles are the report's own notation: drawn as mathematics
        assert all(ax.title.get_parse_math() for ax in fig.axes)
        assert [t.get_text() for t in legend.get_texts()] == [f"input {i}" for i in range(4)]
        assert not any(box.overlaps(ax) for ax in axes)
        assert box.x0 >= max(ax.x1 for ax in axes)  # right of the last panel
    finally:
        plt.close(fig)


def png_pixels(data):
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        return np.asarray(image)


@pytest.mark.parametrize(
    "shape, panel",
    [((8, 8), (96, 96)), ((28, 28), (112, 112)), ((4, 16), (96, 384)), ((300, 200), (300, 200))],
)
def test_small_images_are_scaled_up_without_blur(shape, panel):
    rng = np.random.default_rng(1)
    seed = rng.uniform(size=shape)
    case = np.clip(seed + rng.normal(0, 0.2, size=shape), 0, 1)
    pixels = png_pixels(png_bytes(side_by_side(seed, case, (0.0, 1.0))))
    height, width = panel
    assert pixels.shape == (height, 3 * width + 2 * 4)  # seed | case | difference, 4 px gaps
    factor = height // shape[0]
    assert factor * shape[1] == width  # one integer factor: the aspect ratio is kept
    # nearest neighbour: each source pixel is a factor x factor block of its own grey
    first = pixels[:, :width][::factor, ::factor]
    np.testing.assert_array_equal(first, to_gray8(seed))
    np.testing.assert_array_equal(np.kron(first, np.ones((factor, factor))), pixels[:, :width])


def test_gallery_image_strip_of_a_small_image_is_readable():
    rng = np.random.default_rng(2)
    seed = rng.uniform(size=(8, 16))  # more columns than SERIES_CHANNELS: an image
    item = {
        "seed_index": 0,
        "seed": seed.tolist(),
        "case": np.clip(seed + 0.1, 0, 1).tolist(),
        "seed_decision": "1",
        "case_decision": "2",
        "distance": 0.4,
        "clip": [0.0, 1.0],
    }
    entry = gallery_item(item)
    assert entry["caption"].endswith("(seed | case | difference)")
    pixels = png_pixels(base64.b64decode(entry["uri"].split(",", 1)[1]))
    assert pixels.shape == (96, 3 * 192 + 2 * 4)


def test_large_tc_lists_covered_words_instead_of_a_grid(tmp_path):
    total = 3**12  # 531,441 words: no grid, no memory proportional to them in the page
    times = np.zeros(total, np.int64)
    times[[0, 5, 531440]] = [3, 1, 7]
    tc = MetricState(
        "TC",
        "TC(h/net, w=12, a=3)",
        total,
        times,
        {"component": "h", "abstraction": "net", "w": 12, "a": 3, "window": [0, 20]},
    )
    model = ModelState("m", "lstm", "lstm", (0, 20), "f", 11, {"TC": tc})
    page = render(tmp_path, models={"m": model})
    assert "most covered SAX words (3 of 531441 covered)" in page
    assert '<code>cccccccccccc</code></td><td class="num">7' in page
    assert "TC: SAX words" not in page


def test_names_with_dollar_signs_are_drawn_as_text_not_mathtext(tmp_path):
    """A model named 'cost $\\bogus$' made matplotlib's mathtext parser raise while the
    growth figure was drawn, and the session end lost every output with it."""
    growth = [
        {"test_cases": n, "phase": phase, "BC": rate}
        for n, phase, rate in ((100, "random", 0.2), (200, "targeted", 0.4))
    ]
    campaign = {"model": "cost $\\bogus$ $x^2$", "test_cases": 200, "adversarial": 0,
                "adversary_rate": 0.0, "unique": 0, "distance": "L2", "growth": growth}  # fmt: skip
    data = CoverageData(campaigns=[campaign])
    page = HtmlReport().render(data, evaluate(data, None))
    assert page.count("data:image/png;base64,") == 1  # the growth figure


def test_a_campaign_that_stopped_early_says_so_on_the_page(tmp_path):
    campaign = {"model": "m", "test_cases": 30, "adversarial": 0, "adversary_rate": 0.0,
                "unique": 0, "distance": "L2", "interrupted": True, "shrunk": False,
                "oracle": "classification, radius 0.5"}  # fmt: skip
    data = CoverageData(campaigns=[campaign])
    page = HtmlReport().render(data, evaluate(data, None))
    assert (
        "distance L2; interrupted after 30 test cases; samples as found (not shrunk); "
        "oracle classification, radius 0.5</p>" in page
    )


def test_the_campaign_line_shows_the_average_perturbation_as_the_terminal_does(tmp_path):
    """The terminal, Markdown and JSON reports showed it; the HTML page did not."""
    campaign = {"model": "m", "test_cases": 30, "adversarial": 3, "adversary_rate": 0.1,
                "unique": 2, "distance": "L2", "average_perturbation": 2.5718}  # fmt: skip
    data = CoverageData(campaigns=[campaign])
    page = HtmlReport().render(data, evaluate(data, None))
    assert "2 unique seeds, average perturbation 2.572; distance L2" in page


def test_the_page_fits_a_phone_without_splitting_numbers(tmp_path):
    """No viewport tag: a phone laid the page out 980 px wide and shrank it to 5 px text;
    and every cell could break anywhere, numbers and headers too ('10 / 0%', 'me / tric')."""
    from test_exclusions import model_state

    page = render(tmp_path, models={"m": model_state()})
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in page
    assert "th, td.num { white-space: nowrap; }" in page
    assert '<td class="num">80%</td>' in page


def test_track_errors_are_shown_beside_a_tracked_model(tmp_path):
    state = ModelState("m", "lstm", "lstm", (0, 2), "f", 3, {})
    data = CoverageData(
        models={"m": state}, track_errors=["InvalidArgument (test_t.py::test_broken): boom"]
    )
    page = HtmlReport().render(data, evaluate(data, None))
    assert "rnncov.track() failed: InvalidArgument (test_t.py::test_broken): boom" in page


def test_a_report_that_fails_unexpectedly_costs_only_itself(tmp_path, monkeypatch):
    from pytest_rnncov.files import Output
    from pytest_rnncov.reporting.markdown_report import MarkdownReport
    from pytest_rnncov.reporting.outputs import render_reports

    def broken(self, data, verdict):
        raise ValueError("a bug")

    monkeypatch.setattr(MarkdownReport, "render", broken)
    outputs = [
        ("markdown", Output(tmp_path / "r.md", "markdown", "--rnn-report=markdown")),
        ("json", Output(tmp_path / "r.json", "pytest-rnncov-report", "--rnn-report=json")),
    ]
    data = CoverageData()
    pending, problems = render_reports(outputs, data, evaluate(data, None))
    assert [output.path.name for output, _, _ in pending] == ["r.json"]
    assert problems == [
        f"RNN coverage markdown report not written to {tmp_path / 'r.md'}: ValueError: a bug "
        "(an error in pytest-rnncov; please report it)"
    ]


def test_a_wide_tc_grid_is_listed_not_drawn(tmp_path):
    """TC(w=3, a=10): 1,000 words, but 100 columns of the grid (w=1 with a large alphabet
    once drew a figure 91,468 pixels wide)."""
    times = np.zeros(1000, np.int64)
    times[[0, 999]] = [2, 5]
    config = {"component": "h", "abstraction": "net", "w": 3, "a": 10, "window": [0, 20]}
    tc = MetricState("TC", "TC(h/net, w=3, a=10)", 1000, times, config)
    page = render(
        tmp_path, models={"m": ModelState("m", "lstm", "lstm", (0, 20), "f", 2, {"TC": tc})}
    )
    assert "TC: SAX words" not in page and '<code>jjj</code></td><td class="num">5' in page
    narrow = dict(config, w=2, a=26)
    tc = MetricState("TC", "TC(h/net, w=2, a=26)", 676, np.ones(676, np.int64), narrow)
    page = render(
        tmp_path, models={"m": ModelState("m", "lstm", "lstm", (0, 20), "f", 2, {"TC": tc})}
    )
    assert "TC: SAX words" in page


def test_html_without_matplotlib_is_a_clear_usage_error(pytester):
    pytester.makeconftest("import sys\nsys.modules['matplotlib'] = None\n")
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = pytester.runpytest("--rnn-report=html:out")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*--rnn-report=html: the HTML report needs matplotlib, which is not installed: "
            "pip install 'pytest-rnncov[[]html]'*"
        ]
    )


def test_a_write_that_fails_unexpectedly_costs_only_itself(tmp_path):
    """Text no encoder takes (a lone surrogate) once raised out of the session's end,
    before the verdict was printed and the other files were written."""
    from pytest_rnncov.files import Output
    from pytest_rnncov.reporting.outputs import write_all

    first = Output(tmp_path / "r.md", "markdown", "--rnn-report=markdown")
    second = Output(tmp_path / "r.json", "pytest-rnncov-report", "--rnn-report=json")
    from pytest_rnncov.reporting.json_report import JsonReport

    content = JsonReport().render(CoverageData(), evaluate(CoverageData(), None))
    written, problems, interrupted = write_all(
        [(first, "bad \ud800", "written to"), (second, content, "written to")]
    )
    assert written == [f"written to {tmp_path / 'r.json'}"] and not interrupted
    assert problems == [
        f"RNN coverage file not written to {tmp_path / 'r.md'}: UnicodeEncodeError: "
        "'utf-8' codec can't encode character '\\ud800' in position 4: surrogates not "
        "allowed (an error in pytest-rnncov; please report it)"
    ]
    assert not (tmp_path / "r.md").exists()


def test_a_long_text_sample_is_marked_in_bounded_time(tmp_path):
    """difflib's matcher is quadratic: two 20,000-character samples took 45 s. What lies
    between the common start and end is compared only up to DIFF_PAIRS token pairs."""
    import time

    from pytest_rnncov.reporting.html import _marked_diff

    seed = list("ab" * 10_000)
    case = seed[:5] + list("cd" * 10_000) + seed[-5:]
    start = time.perf_counter()
    pieces = _marked_diff(seed, case, "")
    assert time.perf_counter() - start < 2.0
    assert [p["kind"] for p in pieces] == ["equal", "del", "ins", "equal"]
    assert "".join(p["text"] for p in pieces if p["kind"] != "del") == "".join(case)
    small = _marked_diff("a fine movie".split(), "a fine moving picture".split(), " ")
    assert small == [
        {"kind": "equal", "text": "a fine"},
        {"kind": "del", "text": "movie"},
        {"kind": "ins", "text": "moving picture"},
    ]


def test_a_long_model_name_is_cut_in_figure_titles(tmp_path):
    """A 60,000-character model name made the growth figure 600,000 pixels wide: Pillow
    refused it, and the report was lost; at 3,000 characters it was a sliver."""
    growth = [
        {"test_cases": n, "phase": "random", "BC": rate} for n, rate in ((100, 0.2), (200, 0.4))
    ]
    campaign = {"model": "M" * 60_000, "test_cases": 200, "adversarial": 0,
                "adversary_rate": 0.0, "unique": 0, "distance": "L2", "growth": growth}  # fmt: skip
    data = CoverageData(campaigns=[campaign])
    page = HtmlReport().render(data, evaluate(data, None))
    (encoded,) = re.findall(r"data:image/png;base64,([A-Za-z0-9+/=]+)", page)
    width = png_pixels(base64.b64decode(encoded)).shape[1]
    assert width < 1500


def test_invisible_characters_are_shown_escaped():
    """A zero-width space made 'tiny' and 'tiny\\u200b' look the same in every report."""
    from pytest_rnncov.reporting.markdown_report import escape
    from pytest_rnncov.validation import printable

    assert printable("tiny\u200b\u200f\ufeff\u2028") == "tiny\\u200b\\u200f\\ufeff\\u2028"
    # a soft hyphen, a word joiner and a tag character showed nothing either; a code point
    # past U+FFFF takes \U and eight digits (\u and four would read as two characters)
    assert printable("a\xadb\u2060c\U000e0041") == "a\\xadb\\u2060c\\U000e0041"
    assert escape("~~struck~~") == "\\~\\~struck\\~\\~"


def test_terminal_columns_align_with_escaped_names():
    from pytest_rnncov.reporting.terminal import table

    lines = table([["model", "BC"], ["tiny\x1b", "50%"], ["other", "7%"]])
    assert lines == ["model     BC", "tiny\\x1b  50%", "other     7%"]


def test_figures_are_drawn_for_the_first_models_and_campaigns_only(monkeypatch):
    """Each model's figures took about 0.4 s: a data file of 2,000 models took 14 minutes
    (and a file may hold many more)."""
    from pytest_rnncov.reporting import html

    monkeypatch.setattr(html, "FIGURED", 2)
    bc = MetricState("BC", "BC(h/net)", 4, np.array([1, 0, 2, 0]), {"window": [0, 3]})
    models = {
        f"m{i}": ModelState(f"m{i}", "lstm", "lstm", (0, 3), "f", 5, {"BC": bc}) for i in range(5)
    }
    growth = [{"test_cases": 100, "phase": "random", "BC": 0.5}]
    campaigns = [{"model": f"m{i}", "test_cases": 100, "adversarial": 0, "adversary_rate": 0.0,
                  "unique": 0, "distance": "L2", "growth": growth} for i in range(3)]  # fmt: skip
    data = CoverageData(models=models, campaigns=campaigns)
    page = HtmlReport().render(data, evaluate(data, None))
    assert page.count("data:image/png;base64,") == 2 + 2  # BC of m0, m1; growth of two
    assert (
        "drawn for the first 2 models and campaigns; beyond them, tables only (3 models and "
        "1 campaign more;" in page
    )
    assert all(f"<h2>m{i}" in page or f">m{i}<" in page for i in range(5))  # every table


def test_markdown_tables_right_align_numbers_only():
    """The adversarial table's last column is a folder: it was right-aligned as a number."""
    from pytest_rnncov.reporting.markdown_report import MarkdownReport

    campaign = {"model": "tiny", "test_cases": 200, "adversarial": 3, "adversary_rate": 0.015,
                "unique": 2, "distance": "L2", "average_perturbation": 0.5,
                "saved_to": "/ci/samples/tiny"}  # fmt: skip
    data = CoverageData(campaigns=[campaign])
    lines = MarkdownReport().render(data, evaluate(data, None)).splitlines()
    head = lines.index("### RNN adversarial samples") + 2
    assert lines[head].startswith("| model | test cases |") and "saved to |" in lines[head]
    assert lines[head + 1] == "| --- | ---: | ---: | ---: | ---: | ---: | --- |"
    assert lines[head + 2].endswith("| /ci/samples/tiny |")
