"""How system identifiers read to people: ``deepscholar_base_gpt_4.1`` → "DeepScholar base GPT-4.1".

The one mechanism for system names on pages (workspaces, dashboards, run pages, forms): a curator's
``System.display_name`` when set, else ``readable_identifier`` of the stored name. The raw name stays
what the API, exports, imports and error messages use, and what tooltips show.
"""

import re

# Spellings of words that identifiers write in lower case (products, acronyms); a word with a capital
# letter is kept as written.
KNOWN_WORDS = {
    "gpt": "GPT", "ai": "AI", "llm": "LLM", "rag": "RAG", "api": "API", "storm": "STORM",
    "deepscholar": "DeepScholar", "deepsynth": "DeepSynth", "reportbench": "ReportBench", "surveylens": "SurveyLens",
    "scisage": "SciSage", "autosurvey": "AutoSurvey", "openai": "OpenAI", "llama": "Llama", "qwen": "Qwen",
    "claude": "Claude", "gemini": "Gemini", "mistral": "Mistral", "deepseek": "DeepSeek",
}
_SEPARATORS = re.compile(r"[_\s-]+")
_VERSION = re.compile(r"^\d+(?:\.\d+)*[a-z]?$")
_IDENTIFIER = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\- ]*")  # anything else is shown exactly as written


def readable_identifier(identifier: str) -> str:
    """An identifier in words: separators become spaces, known words their usual spelling, a version
    number stays joined to the model it numbers ("GPT-4.1"), mixed-case words stay as written."""
    if not _IDENTIFIER.fullmatch(identifier.strip()):
        return identifier
    words = [w for w in _SEPARATORS.split(identifier.strip()) if w]
    out: list[str] = []
    for word in words:
        spelled = KNOWN_WORDS.get(word, word)  # only an all-lower-case word: "Autosurvey" is as its authors wrote it
        if out and _VERSION.match(word) and out[-1] in KNOWN_WORDS.values():
            out[-1] = f"{out[-1]}-{word}"
            continue
        out.append(spelled)
    if out and out[0].islower():
        out[0] = out[0][0].upper() + out[0][1:]
    return " ".join(out) or identifier


def system_label(name: str, version: str = "", display_name: str = "") -> str:
    """What people read for a system: its display name, or its identifier in words (with its version)."""
    if display_name.strip():
        return display_name.strip()
    return readable_identifier(f"{name} {version}".strip())
