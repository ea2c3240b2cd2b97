"""The HTML report: every plot embedded and decodable, text diffs marked, and a clear
message without matplotlib."""

from __future__ import annotations

import base64
import io
from html.parser import HTMLParser

import keras  # noqa: F401  (loaded once: pytester's in-process runs must not re-import TF)
import pytest

from pytest_rnncov.html import HtmlReport
from test_plugin import CONFTEST

HTML_TESTS = '''
from conftest import inputs
from pytest_rnncov import GaussianMutator, Oracle


def test_generate(tiny, rnncov):
    tiny.predict(inputs(1, n=32))
    seeds = rnncov.rng().normal(size=(8, 6, 2)).astype("float32")
    result = tiny.campaign(seeds, GaussianMutator(variance=(2.0, 4.0), clip=None),
                           Oracle(radius=None), budget=200, patience=1).run()
    assert result.adversarial > 0
'''


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
    for expected in ("signals", "BC coverage times", "SC coverage times", "TC words",
                     "coverage growth"):
        assert expected in alts
    assert sum(alt.startswith("seed ") for alt in alts) >= 1
    for image in parser.images:
        assert image["src"].startswith("data:image/png;base64,")
        data = base64.b64decode(image["src"].split(",", 1)[1])
        pixels = plt.imread(io.BytesIO(data), format="png")
        assert pixels.ndim >= 2 and pixels.shape[0] > 4 and pixels.shape[1] > 4
    assert "http://" not in page and "https://" not in page  # opens with no network


def test_text_gallery_marks_the_changes(tmp_path):
    item = {"seed_index": 3, "seed": "a fine movie", "case": "a fine moving picture",
            "seed_decision": "1", "case_decision": "0", "distance": 0.5, "clip": []}
    html = HtmlReport.gallery_item(item)
    assert "<del>movie</del>" in html and "<ins>moving picture</ins>" in html
    smiles = dict(item, seed="CCO", case="OCC")
    assert "<ins>" in HtmlReport.gallery_item(smiles)


def test_html_without_matplotlib_is_a_clear_usage_error(pytester):
    pytester.makeconftest("import sys\nsys.modules['matplotlib'] = None\n")
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = pytester.runpytest("--rnn-report=html:out")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([
        "*--rnn-report=html: the HTML report draws its plots with matplotlib, which is not "
        "installed: pip install 'pytest-rnncov[[]html]'*"
    ])
