"""Markdown to safe HTML. Everything users or systems wrote passes through here before display.

An image on another host (``![](http://…)``) becomes a plain link to it: opening a report must
not make the browser call anyone (the image host would learn who read which report, and when).
"""

import re
from html import escape

import nh3
from markdown_it import MarkdownIt

_markdown = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")


def _is_remote(src: str) -> bool:
    lowered = src.strip().lower()
    return lowered.startswith(("http:", "https:", "//", "\\\\", "/\\", "\\/")) or ":" in lowered.split("/", 1)[0]


def _image(renderer, tokens, idx, options, env) -> str:
    token = tokens[idx]
    src = str(token.attrGet("src") or "")
    if not _is_remote(src):
        return renderer.image(tokens, idx, options, env)
    alt = renderer.renderInlineAsText(token.children or [], options, env)
    return f'<a href="{escape(src)}">{escape(alt or src)}</a>'


_markdown.add_render_rule("image", _image)

ALLOWED_TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "del", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr",
    "i", "img", "li", "ol", "p", "pre", "strong", "sub", "sup", "table", "tbody", "td", "th", "thead", "tr", "ul",
}
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "img": {"src", "alt", "title"}, "th": {"align"}, "td": {"align"}}


def markdown_to_safe_html(text: str) -> str:
    html = _markdown.render(text or "")
    return nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
    )


# A backslash before one of LaTeX's special characters in text taken from a paper's source
# (arXiv abstracts: "KV\$ caching" is "KV$ caching" in the paper); a doubled backslash is left.
_LATEX_ESCAPE = re.compile(r"(?<!\\)\\([$%&#_{}])")


def source_text(text: str) -> str:
    """Plain text from a paper's source as the paper shows it: LaTeX's escaped specials unescaped.
    The page escapes the result as any text (no markup is added)."""
    return _LATEX_ESCAPE.sub(r"\1", text or "")
