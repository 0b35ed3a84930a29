"""Presentation helpers of the workspace (no database)."""

from annotation.views.display import _md_plain, report_view


def test_markdown_bibliography_entries_read_as_text():
    entry = r"\[[Stephan Zheng' 2021-08-05](http://arxiv.org/abs/2108.02755v1)\] Document 1: The AI Economist"
    assert _md_plain(entry) == "[Stephan Zheng' 2021-08-05] Document 1: The AI Economist"
    assert _md_plain("[1] Saez, E. (2010). Do Taxpayers Bunch at Kink Points?") == (
        "[1] Saez, E. (2010). Do Taxpayers Bunch at Kink Points?"
    )
    assert _md_plain(r"Smith \*et al.\* [site](https://example.org) \_x\_") == "Smith *et al.* site _x_"


def test_a_report_bibliography_shows_its_entries_as_text_with_their_links():
    text = (
        "# Related Works\n\nTax policy has been learned end to end [1].\n\n## References\n\n"
        r"1. \[[Stephan Zheng' 2021-08-05](http://arxiv.org/abs/2108.02755v1)\] The AI Economist" "\n"
    )
    view = report_view(text, anchor="ref-left")
    assert [ref["text"] for ref in view.references] == ["1. [Stephan Zheng' 2021-08-05] The AI Economist"]
    assert view.references[0]["href"]


def test_a_report_bibliography_keeps_the_reports_own_numbering():
    from django.template.loader import render_to_string

    text = "# Related Works\n\nSee [1] and [2].\n\n## References\n\n[1] Saez, E. Kink points.\n[2] Zheng, S. The AI Economist.\n"
    html = render_to_string("annotation/_bibliography.html", {"references": report_view(text, anchor="r").references})
    assert '<ul class="ws-refs">' in html and "<ol" not in html  # the list adds no second number
    assert "[1] Saez, E. Kink points." in html and "[2] Zheng, S. The AI Economist." in html
    assert "comment" not in html
