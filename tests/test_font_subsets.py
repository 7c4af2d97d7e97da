"""Font subsets kept between reports (`cmbench.report.fonts`): the same fonts, made once."""
from __future__ import annotations

import io

import pytest

pytest.importorskip("matplotlib")
import matplotlib

matplotlib.use("Agg")
from matplotlib.backends import _backend_pdf_ps as pdfps  # noqa: E402
from matplotlib.backends.backend_pdf import PdfPages  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from cmbench.report import fonts  # noqa: E402
from cmbench.report.style import RC  # noqa: E402

pytestmark = pytest.mark.skipif(not hasattr(pdfps, "SubsetResults"),
                                reason="font subsets are kept with matplotlib 3.11's subset interface only")


def _document(text: str, folder) -> bytes:
    """A one-page PDF with ``text`` in the regular, bold and oblique faces (as report pages have)."""
    buf = io.BytesIO()
    with matplotlib.rc_context(RC), fonts.font_subsets(folder):
        with PdfPages(buf) as pdf:
            fig = Figure(figsize=(4, 3))
            fig.text(0.1, 0.8, text)
            fig.text(0.1, 0.5, text, fontweight="bold")
            fig.text(0.1, 0.2, text, style="italic")
            pdf.savefig(fig)
    return buf.getvalue()


def _font_programs(blob: bytes) -> dict:
    import pypdf

    out = {}
    for page in pypdf.PdfReader(io.BytesIO(blob)).pages:
        for font in page["/Resources"]["/Font"].values():
            font = font.get_object()
            if font["/Subtype"] != "/Type0":
                continue
            d = font["/DescendantFonts"][0].get_object()
            name = str(font["/BaseFont"]).split("+")[-1]  # after the subset's tag, which varies
            out[name] = d["/FontDescriptor"]["/FontFile2"].get_object().get_data()
    return out


@pytest.fixture
def made(monkeypatch):
    """The subsets matplotlib's own function makes (the kept ones are not counted)."""
    calls = []
    original = pdfps.get_glyphs_subset

    def counting(fontfile, glyphs):
        calls.append(len(list(glyphs)))
        return original(fontfile, glyphs)

    monkeypatch.setattr(pdfps, "get_glyphs_subset", counting)
    return calls


def test_a_second_document_with_other_text_reads_its_subsets_back(tmp_path, made):
    import pypdf

    first = _document("Error versus budget rho = 0.05", tmp_path)
    assert made and len(list(tmp_path.glob("*.font"))) == len(made)
    made.clear()
    second = _document("Tukey Median: 12 cells, 3.4 s", tmp_path)  # other letters, all in COMMON_TEXT
    assert made == []  # every subset came from the folder
    assert _font_programs(second) == _font_programs(first)  # the same font programs
    text = pypdf.PdfReader(io.BytesIO(second)).pages[0].extract_text()
    assert "Tukey Median: 12 cells, 3.4 s" in text  # the glyphs map back to their characters
    # without a folder, matplotlib makes each subset, as before
    made.clear()
    _document("Tukey Median: 12 cells, 3.4 s", None)
    assert made


def test_a_kept_subset_holds_every_common_character(tmp_path, made):
    from fontTools.ttLib import TTFont

    _document("a", tmp_path)
    for name, program in _font_programs(_document("a", tmp_path)).items():
        cmap = TTFont(io.BytesIO(program)).getBestCmap()
        assert {ord(c) for c in "Az09-.,:=()"} <= set(cmap), name
        assert not {"GSUB", "GPOS", "GDEF"} & set(TTFont(io.BytesIO(program)).keys()), name


def test_a_damaged_kept_subset_is_made_again(tmp_path, made):
    first = _document("Error versus budget", tmp_path)
    for path in tmp_path.glob("*.font"):
        blob = bytearray(path.read_bytes())
        blob[-10] ^= 0xFF  # inside the font program: the stored SHA-256 no longer matches
        path.write_bytes(bytes(blob))
    made.clear()
    again = _document("Error versus budget", tmp_path)
    assert made  # made anew, not read
    assert _font_programs(again) == _font_programs(first)
    made.clear()
    _document("Error versus budget", tmp_path)  # and kept again, intact
    assert made == []


def test_the_folder_keeps_the_most_recently_used_subsets(tmp_path, made, monkeypatch):
    monkeypatch.setattr(fonts, "KEEP", 2)
    foreign = tmp_path / "mine.font"  # not a name this cache gives: never deleted
    foreign.write_bytes(b"x")
    _document("x", tmp_path)
    assert len([p for p in tmp_path.glob("*.font") if p != foreign]) <= 2 and foreign.exists()


def test_cache_clear_removes_kept_subsets(tmp_path):
    from cmbench.files import PAGE_FILE

    _document("x", tmp_path)
    names = [p.name for p in tmp_path.glob("*.font")]
    assert names and all(PAGE_FILE.match(n) for n in names)
