"""Stored-XSS probes. Each calls ``probe()`` (or names ``xss-probe``) so a page can be searched for
markup that came from a payload rather than from our templates."""

PAYLOADS = [
    "<script>probe('xss-probe-1')</script>",
    "<img src=x onerror=\"probe('xss-probe-2')\">",
    "<svg onload=\"probe('xss-probe-3')\"></svg>",
    "<a href=\"javascript:probe('xss-probe-4')\">click</a>",
    "[click me](javascript:probe('xss-probe-5'))",
    "[x](JaVaScRiPt:probe('xss-probe-6'))",
    "![img](javascript:probe('xss-probe-7'))",
    "&lt;script&gt;probe('xss-probe-8')&lt;/script&gt;",
    "&#60;img src=x onerror=probe('xss-probe-9')&#62;",
    "<div onmouseover=\"probe('xss-probe-10')\">hover</div>",
    "\"><script>probe('xss-probe-11')</script>",
    "'><svg/onload=probe('xss-probe-12')>",
    "<iframe src=\"javascript:probe('xss-probe-13')\"></iframe>",
    "[a](&#106;avascript:probe('xss-probe-14'))",
    "<details open ontoggle=\"probe('xss-probe-15')\">",
]
ALL = "\n\n".join(PAYLOADS)
