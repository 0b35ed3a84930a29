"""SurveyLens structural statistics."""

from __future__ import annotations

from benchmark.parsing import parse_report
from benchmark.parsing.stats import surveylens_sentence_count


def stats(text: str, fmt: str = "markdown"):
    return parse_report(text, format=fmt).stats


def test_images_markdown_html_and_captions_count_once_per_figure():
    text = (
        "Intro.\n\n![Arch](fig1.png)\nFigure 1: The architecture.\n\n"  # image + its caption: one figure
        '<img src="b.png" alt="x">\n\nSome text.\n\nMore text.\n\n'  # an image without caption
        "Figure 3: Caption left by PDF extraction.\n\n"  # a caption without image (MinerU)
        "Figure 3 illustrates the results again.\n\n"  # a reference to a figure, not a caption
        "Figure4.OCR glued caption\n\n"
        "```\n![not an image](code.png)\n```\n"
    )
    assert stats(text).images == 4


def test_latex_figure_environment_is_an_image():
    assert stats("\\begin{figure}\n\\includegraphics{a}\n\\caption{x}\n\\end{figure}\n").images == 1


def test_tables_count_tables_not_rows():
    text = (
        "**Table 1: Results**\n\n| a | b |\n|---|:-:|\n| 1 | 2 |\n| 3 | 4 |\n\n"
        "Between.\n\n| c |\n|---|\n| 5 |\n\n"
        "<html><body><table><tr><td>x</td></tr></table></body></html>\n\n"
        "Table 4 \u2013 Only a caption (the table itself was flattened)\n"
    )
    assert stats(text).tables == 4


def test_pipes_without_a_delimiter_row_are_not_a_table():
    assert stats("a | b\nc | d\n").tables == 0


def test_equations_are_display_math_and_inline_math_is_separate():
    text = (
        "Inline $x^2$ and \\(y\\) and units $5 6 0 \\mathrm{nm}$ but not $5 and $10.\n\n"
        "$$\nE = mc^2\n$$\n\n"
        "Inline display $$a+b$$ inside text.\n\n"
        "\\[\n\\sum_i x_i\n\\]\n\n"
        "\\begin{equation}\n\\begin{aligned} a &= b \\end{aligned}\n\\end{equation}\n\n"
        "\\begin{align*}\nx &= 1\n\\end{align*}\n\n"
        "\\[[Author' 2020](http://x.org)\\] is an escaped link, not math.\n"
    )
    result = stats(text)
    assert result.equations == 5
    assert result.inline_math == 3


def test_dollar_signs_that_are_not_math():
    assert stats("Caching KV$, which helps, and KV$ reuse; prices $5 and $10.").inline_math == 0


def test_surveylens_word_char_and_sentence_formulas():
    text = "# H\n\nOne two three. Four e.g. five!\n\n## References\n\n[1] Not counted at all.\n"
    result = stats(text)
    body = "One two three. Four e.g. five!"
    assert result.words == len(body.split()) == 6
    assert result.chars == len(body)
    assert result.surveylens_sentences == surveylens_sentence_count(body) == 4
    assert result.sentences == 2
    assert result.references == 1


def test_paragraph_and_citation_counts():
    result = stats("Para one [1, 2].\n\n- item [3]\n- item\n\n## References\n\n[1] a\n[2] b\n")
    assert result.paragraphs == 3
    assert (result.citations, result.citation_groups, result.resolved_citations) == (3, 2, 2)
