"""Text normalization shared by the importers (benchmark) and reference matching
(``scoring.metrics``): pure Python, no Django, so the metric library can import it."""

import re
import unicodedata

# LaTeX accent commands: symbol accents (\'e, \"{o}) and letter accents that
# need a brace or a space (\v{s}, \c c).  The accent is dropped, the letter kept.
_LATEX_ACCENT = re.compile(
    r"\\(?:[`'^\"~=.]|[uvHcdbktr](?![A-Za-z]))\s*(?:\{\s*(\\?[A-Za-z])\s*\}|(\\?[A-Za-z]))"
)
_LATEX_LETTERS = {
    "ss": "ss", "o": "o", "O": "O", "ae": "ae", "AE": "AE", "oe": "oe", "OE": "OE",
    "aa": "a", "AA": "A", "l": "l", "L": "L", "i": "i", "j": "j",
}
_LATEX_NAMED_LETTER = re.compile(r"\\(ss|ae|AE|oe|OE|aa|AA|o|O|l|L|i|j)(?![A-Za-z])")
_GREEK = (
    "alpha beta gamma delta epsilon varepsilon zeta eta theta vartheta iota kappa lambda mu nu xi "
    "pi rho sigma tau upsilon phi varphi chi psi omega"
).split()
_GREEK_CHARS = "αβγδεεζηθθικλμνξπρστυφφχψω"
_LATEX_GREEK = re.compile(r"\\(" + "|".join(sorted(_GREEK, key=len, reverse=True)) + r")(?![A-Za-z])", re.IGNORECASE)
_GREEK_MAP = dict(zip(_GREEK, _GREEK_CHARS))
# Formatting wrappers keep their argument; matched as a prefix so that a
# brace-less ``\textCIS2`` (seen in real bibliographies) keeps ``CIS2``.
_LATEX_WRAPPER = re.compile(
    r"\\(?:text(?:it|bf|rm|sc|tt|sf|up|sl|normal)|text|emph|math(?:rm|bf|it|cal|sf|tt|bb|frak)|math|ensuremath|[mh]box)"
)
_LATEX_COMMAND = re.compile(r"\\[A-Za-z]+\*?")
# Letters that do not decompose under NFKD but are commonly ASCII-folded in bibliographies.
_FOLD = str.maketrans({"ø": "o", "æ": "ae", "œ": "oe", "ł": "l", "đ": "d", "ð": "d", "þ": "th", "ı": "i", "ħ": "h"})
_JOINERS = {"{", "}", "$", "-", "\u2010", "\u2011", "\u2012", "\u2013", "\u2014", "\u2015", "\u2212", "'", "\u2019", "\u02bc", "\u00ad"}


def _replace_latex(text: str) -> str:
    text = _LATEX_ACCENT.sub(lambda m: (m.group(1) or m.group(2)).lstrip("\\"), text)
    text = _LATEX_NAMED_LETTER.sub(lambda m: _LATEX_LETTERS[m.group(1)], text)
    text = _LATEX_GREEK.sub(lambda m: _GREEK_MAP[m.group(1).lower()], text)
    text = _LATEX_WRAPPER.sub("", text)  # \emph{x}, \textit{x}, \mathrm{x}: keep x
    return _LATEX_COMMAND.sub(" ", text)  # any other macro is dropped


def _fold_char(ch: str, prev_base_latin: bool) -> tuple[str, bool]:
    """Drop combining marks on Latin letters; punctuation/symbols become spaces."""
    if ch.isascii():
        if ch.isalnum():
            return ch, ch.isalpha()
        if ch in _JOINERS:
            return "", False
        return " ", False
    cat = unicodedata.category(ch)
    if cat == "Mn":
        return ("" if prev_base_latin else ch), prev_base_latin
    if ch in _JOINERS or cat == "Cf":
        return "", False
    if cat[0] in "PSZC":
        return " ", False
    return ch, ("LATIN" in unicodedata.name(ch, ""))


def normalize_title(title: str) -> str:
    """Canonical form of a title for matching.

    Steps: LaTeX accents and letters are replaced by their base letter
    (``{\\"o}`` → ``o``, ``\\'e`` → ``e``, ``\\ss`` → ``ss``), Greek-letter
    macros by the Greek letter, formatting macros (``\\emph``, ``\\mathrm``) are
    dropped keeping their argument, any other macro is dropped; Unicode NFKC (ligatures, full-width forms),
    case folding, removal of diacritics on Latin letters (so ``Schütze``,
    ``Sch{\\"u}tze`` and ``Schutze`` agree); hyphens, dashes and apostrophes are
    deleted (``pre-training`` → ``pretraining``), as are TeX grouping braces and
    ``$`` (``{BERT}`` → ``bert``); every other punctuation or symbol character
    (quotes, colons, slashes, ...) becomes a space, and whitespace is collapsed.
    """
    if not isinstance(title, str):
        raise ValueError(f"title must be a string; got {type(title).__name__}")
    text = unicodedata.normalize("NFKC", _replace_latex(title)).casefold().translate(_FOLD)
    out: list[str] = []
    prev_latin = False
    for ch in unicodedata.normalize("NFKD", text):
        piece, prev_latin = _fold_char(ch, prev_latin)
        out.append(piece)
    return " ".join(unicodedata.normalize("NFC", "".join(out)).split())
