"""The accessibility check finds what it should (so a clean result on our pages means something)."""

import pytest

from tests.support.axe import axe_violations

pytestmark = pytest.mark.browser


def test_axe_reports_wcag_violations_and_passes_a_clean_page(page):
    page.set_content('<html lang="en"><head><title>t</title></head><body><main>'
                     '<img src="data:image/gif;base64,R0lGODlhAQABAAAAACw="><p style="color:#aaa;background:#fff">'
                     'faint</p></main></body></html>')
    assert {v["id"] for v in axe_violations(page)} == {"image-alt", "color-contrast"}
    page.set_content('<html lang="en"><head><title>t</title></head><body><main><p>Fine.</p></main></body></html>')
    assert axe_violations(page) == []
