"""Markdown rendering: remote images become plain links, so showing a report calls no one."""

import pytest

from benchmark.rendering import markdown_to_safe_html


@pytest.mark.parametrize(
    ("markdown", "html"),
    [
        ("![chart](http://example.invalid/x.png)",
         '<p><a href="http://example.invalid/x.png" rel="noopener noreferrer nofollow">chart</a></p>'),
        ("![](https://example.invalid/a.png)",
         '<p><a href="https://example.invalid/a.png" rel="noopener noreferrer nofollow">'
         "https://example.invalid/a.png</a></p>"),
        ("![p](//example.invalid/x)", '<p><a href="//example.invalid/x" rel="noopener noreferrer nofollow">p</a></p>'),
        ("![b](HTTP://EXAMPLE.invalid/x)",
         '<p><a href="HTTP://EXAMPLE.invalid/x" rel="noopener noreferrer nofollow">b</a></p>'),
    ],
)
def test_remote_images_become_links(markdown, html):
    assert markdown_to_safe_html(markdown).strip() == html


def test_an_image_of_our_own_stays_an_image():
    assert markdown_to_safe_html("![fig](figures/a.png)").strip() == '<p><img src="figures/a.png" alt="fig"></p>'


def test_a_data_image_loses_its_address():
    html = markdown_to_safe_html("![x](data:image/png;base64,AAAA)")
    assert "<img" not in html and "data:" not in html
