"""The sentence splitter's hard cases."""

from __future__ import annotations

import pytest

from benchmark.parsing import parse_report


def sentences(text: str, fmt: str = "markdown") -> list[str]:
    report = parse_report(text, format=fmt)
    for s in report.sentences:
        assert report.text[s.start : s.end] == s.text
    return [s.text for s in report.sentences]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Methods differ, e.g. the loss. Results follow.", ["Methods differ, e.g. the loss.", "Results follow."]),
        ("We use BERT, i.e. a transformer. It works.", ["We use BERT, i.e. a transformer.", "It works."]),
        (
            "Smith et al. (2020) showed this. Lee et al. [3] disagreed. Then it ended.",
            ["Smith et al. (2020) showed this.", "Lee et al. [3] disagreed.", "Then it ended."],
        ),
        (
            "As shown in Fig. 3, accuracy rises. See Figs. 4 and 5. Eq. 2 holds.",
            ["As shown in Fig. 3, accuracy rises.", "See Figs. 4 and 5.", "Eq. 2 holds."],
        ),
        ("GPT-4 vs. Claude is compared. The winner is unclear.", ["GPT-4 vs. Claude is compared.", "The winner is unclear."]),
        (
            "Accuracy reached 3.5 points. Recall improved to 0.91. Good.",
            ["Accuracy reached 3.5 points.", "Recall improved to 0.91.", "Good."],
        ),
        ("J. R. R. Tolkien wrote it. A. Smith agreed.", ["J. R. R. Tolkien wrote it.", "A. Smith agreed."]),
        ("The U.S. federal tax is one. It is complex.", ["The U.S. federal tax is one.", "It is complex."]),
        ("Firefly (*P. pyralis*) glows. It is bright.", ["Firefly (*P. pyralis*) glows.", "It is bright."]),
        ("Prof. Smith and Dr. Lee met. They talked.", ["Prof. Smith and Dr. Lee met.", "They talked."]),
        ("The value is approx. five. Cost is ca. 10 USD.", ["The value is approx. five.", "Cost is ca. 10 USD."]),
        ("Published in Vol. 5, No. 3, pp. 1-10. Next.", ["Published in Vol. 5, No. 3, pp. 1-10.", "Next."]),
        ("The answer was no. Then we left.", ["The answer was no.", "Then we left."]),
        ("Is it true? Yes! Maybe... Perhaps.", ["Is it true?", "Yes!", "Maybe...", "Perhaps."]),
        ('He said "It works." Then left.', ['He said "It works."', "Then left."]),
    ],
)
def test_abbreviations_numbers_and_initials(text, expected):
    assert sentences(text) == expected


def test_urls_are_never_split():
    assert sentences("See https://example.com/a.b?c=1. Next sentence. Visit www.x.org/A.B now.") == [
        "See https://example.com/a.b?c=1.",
        "Next sentence.",
        "Visit www.x.org/A.B now.",
    ]


def test_citations_are_never_split_and_stay_with_their_sentence():
    assert sentences("This is cited (Smith et al., 2020). Another (Lee, 2021; Kim, 2019a). Final.") == [
        "This is cited (Smith et al., 2020).",
        "Another (Lee, 2021; Kim, 2019a).",
        "Final.",
    ]
    assert sentences("It works.[1] The next one.[2][3] Last one [4].") == [
        "It works.[1]",
        "The next one.[2][3]",
        "Last one [4].",
    ]
    assert sentences("See arXiv:2301.01234v2. Also 10.1145/3292500.3330701. End.") == [
        "See arXiv:2301.01234v2.",
        "Also 10.1145/3292500.3330701.",
        "End.",
    ]


def test_citation_sentence_index():
    report = parse_report("First claim [1]. Second claim.[2] Third (Smith, 2020).")
    assert [(c.target, c.sentence_index) for c in report.citations] == [("1", 0), ("2", 1), ("Smith 2020", 2)]


def test_code_and_math_are_opaque():
    assert sentences("Call `f. G()` here. Then $a. B$ holds. Done.") == [
        "Call `f. G()` here.",
        "Then $a. B$ holds.",
        "Done.",
    ]


def test_sentences_stay_inside_paragraphs_and_skip_headings_and_tables():
    text = "# Title.\n\nFirst para ends here\n\nSecond para.\n\n| a. B | c |\n|---|---|\n| 1 | 2 |\n"
    report = parse_report(text)
    assert [s.text for s in report.sentences] == ["First para ends here", "Second para."]
    assert [s.paragraph_index for s in report.sentences] == [0, 1]


def test_ocr_repairs_for_mineru_text():
    # reference numbers glued to the period, and a lost space (SurveyLens Human.json)
    assert sentences("The peak is red-shifted.13 However, it is dim.") == [
        "The peak is red-shifted.13",
        "However, it is dim.",
    ]
    assert sentences("It works in living animals.BLI is widely used.") == [
        "It works in living animals.",
        "BLI is widely used.",
    ]
    assert sentences("Measured at 2.5 Hz and more.") == ["Measured at 2.5 Hz and more."]


def test_plain_text_line_breaks():
    text = "Attacks are\ndigital\n, or physical. Next line\ncontinues here.\nNew paragraph."
    report = parse_report(text, format="text")
    assert [p.text for p in report.paragraphs] == [
        "Attacks are\ndigital\n, or physical. Next line\ncontinues here.",
        "New paragraph.",
    ]
    assert [s.text for s in report.sentences] == [
        "Attacks are\ndigital\n, or physical.",
        "Next line\ncontinues here.",
        "New paragraph.",
    ]
