"""Text from a paper's LaTeX source shows as the paper does (issue 30: "KV\\$" showed its backslash)."""

import pytest
from django.urls import reverse

from benchmark.rendering import source_text
from tests.annotation_factories import curator
from tests.factories import SurveyFactory, TaskFactory


@pytest.mark.parametrize(("raw", "shown"), [
    ("caching intermediate results (KV\\$) after", "caching intermediate results (KV$) after"),
    ("50\\% of \\#1 \\& a\\_b \\{x\\}", "50% of #1 & a_b {x}"),
    ("a line break \\\\$ stays", "a line break \\\\$ stays"),  # an escaped backslash is not an escape
    ("\\alpha and C:\\path", "\\alpha and C:\\path"),  # other backslashes are the text's own
    ("", ""),
])
def test_source_text_unescapes_latex_specials_only(raw, shown):
    assert source_text(raw) == shown


@pytest.mark.django_db
def test_the_task_page_shows_the_abstract_as_the_paper_does(client):
    client.force_login(curator("cur"))
    task = TaskFactory(protocol="deepscholar", survey=SurveyFactory(
        abstract="Little is known about KV\\$ caching, where <b>design</b> matters."))
    html = client.get(reverse("benchmark:task_detail", args=[task.pk])).content.decode()
    assert "about KV$ caching, where &lt;b&gt;design&lt;/b&gt; matters." in html
    assert "KV\\$" not in html
