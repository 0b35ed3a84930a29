"""SurveyLens' published results tree, as cloned: ``results/processed/<System>/<Discipline>/<file>``.

``path`` may be the repository root, ``results/`` or ``results/processed/``. Each system folder
holds one folder per discipline, each file one survey in the Structured Survey Representation.
The ``Human`` folder holds the human-written surveys, each twice: ``<title>.md`` (the text) and
``<title>_split.json`` (its SSR); the pair is one survey (SSR for the structure, the ``.md`` as its
full text). Upstream's ``processing_summary.json`` at the root (its conversion log) is read and
reported, not stored.

Discipline folders are matched up to case (``Qwen/education/`` is Education); a case-variant
folder is reported by name, and one beside its canonical twin is merged into it.

File names are the topic the system was given (``survey_`` prefixes, ``_paper`` suffixes,
underscores and ``_split`` aside), except that some systems (and the human files) are named
after the human survey's title, cut short and stamped (``10_Brightening_up_..._for_i_20251226_
072540``). So a topic is found in three steps, within one discipline:

1. files with the same cleaned name are one topic;
2. a file whose cleaned name begins the cleaned name of a human file joins that human file;
3. a human file's group joins the topic group whose name shares the most content words with
   the human title (at least two); without one it stays a topic of its own, titled after it.

A topic's task is the existing one when a label file or another import introduced it (see
``surveylens.topic_tasks``), else keyed by the topic's slug. Files the import cannot use (a
second file of one system on one topic, an unknown discipline folder, a file outside
``<System>/<Discipline>/``) are skipped and named with the reason; none fails the import.

Topics are read and stored one at a time, so memory holds one topic's files whatever the
tree's size (the whole published tree is 144 MB).
"""

import re
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings

from .base import ImportFailed, ImportResult, read_json
from .common import decode_text, disciplines_ensure, slugify_key
from .surveylens import (
    DISCIPLINES,
    SOURCE,
    _content_words,
    _ssr,
    discipline_code,
    human_survey_row,
    topic_key,
    topic_report_store,
    topic_task_store,
)

HUMAN = "human"
HUMAN_FOLDER = "Human"
SUMMARY = "processing_summary.json"
REPOSITORY = "(repository)"  # the skip table's row for files that belong to no system
_STAMP = re.compile(r"_\d{8}_\d{6}$")
# Names cut short are long ones (SciSage cuts at 50 characters, Gemini and Qwen at about 60): a
# shorter name that begins a longer one is a topic of its own ("Large Language Models in Education").
_CUT = 40


def processed_root(folder: Path) -> Path | None:
    for candidate in (folder / "results" / "processed", folder / "processed"):
        if candidate.is_dir():
            return candidate
    if folder.name == "processed" and folder.parent.name == "results":
        return folder
    return None


def clean_name(stem: str) -> str:
    """The topic (or title) a file is named after."""
    stem = re.sub(r"_split$", "", stem)
    stem = _STAMP.sub("", stem)
    stem = re.sub(r"^\d+_", "", stem)
    stem = re.sub(r"^survey_|_(paper|survey)$", "", stem)
    return " ".join(stem.replace("_", " ").split())


@dataclass
class HumanSurvey:
    ssr: tuple[Path, str] | None = None  # (path, shown name) of <title>_split.json
    text: tuple[Path, str] | None = None  # of <title>.md


@dataclass
class Group:
    name: str  # the topic, or the human title for a human-anchored group
    code: str
    files: list[tuple[str, Path, str]] = field(default_factory=list)  # (system, path, shown name)
    human: HumanSurvey | None = None


def _summary(path: Path, shown: str, *, result: ImportResult) -> None:
    """Upstream's conversion log: its totals go into the messages (it names no survey of ours)."""
    try:
        data = read_json(path, name=shown)
    except ImportFailed as exc:
        result.skip(REPOSITORY, shown, f"unreadable processing summary: {exc.message}")
        return
    parts = []
    for stage, counts in (data.items() if isinstance(data, dict) else []):
        if isinstance(counts, dict):
            numbers = ", ".join(f"{k} {v}" for k, v in counts.items() if isinstance(v, int) and not isinstance(v, bool))
            parts.append(f"{stage}: {numbers}")
    result.add("file", "read")
    result.add("processing summary", "reported")
    result.messages.append(f"{shown}: upstream's processing summary, reported and not stored ("
                           + ("; ".join(parts) or "no totals") + ")")


def _scan(root: Path, base: Path, *, result: ImportResult) -> list[tuple[str, str, Path, str]]:
    """``(system, discipline code, path, shown name)`` for every survey file; every other file
    is reported (skipped, with its reason, or read as the processing summary)."""
    found = []
    for item in sorted(root.iterdir()):
        if item.is_file():
            shown = item.relative_to(base).as_posix()
            if item.name == SUMMARY:
                _summary(item, shown, result=result)
            elif not item.name.startswith("."):
                result.skip(REPOSITORY, shown, "not in a <System>/<Discipline>/ folder")
    for system_dir in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        canonical: dict[str, str] = {}  # discipline code → the folder read first
        for item in sorted((p for p in system_dir.iterdir() if not p.name.startswith(".")), key=_canonical_first):
            shown = item.relative_to(base).as_posix()
            if item.is_file():
                result.skip(system_dir.name, shown, "not in a <Discipline>/ folder")
                continue
            code = discipline_code(item.name)
            if code is None:
                known = ", ".join(n for n, _ in DISCIPLINES.values())
                for file in sorted(p for p in item.rglob("*") if p.is_file()):
                    result.skip(system_dir.name, file.relative_to(base).as_posix(),
                                f"{item.name}/ is not a SurveyLens discipline (known: {known})")
                continue
            name = DISCIPLINES[code][0]
            if code in canonical:
                result.messages.append(f"{shown}/: merged into {canonical[code]}/ ({name}; the same discipline up to "
                                       "case)")
            elif item.name != name:
                result.messages.append(f"{shown}/: read as the {name} discipline (folder named {item.name!r})")
            canonical.setdefault(code, shown)
            for file in sorted(p for p in item.rglob("*") if p.is_file() and not p.name.startswith(".")):
                name = file.relative_to(base).as_posix()
                if file.name == SUMMARY:  # Gemini and SurveyX keep one per discipline too
                    _summary(file, name, result=result)
                    continue
                suffixes = (".json", ".md") if system_dir.name.lower() == HUMAN else (".json",)
                if file.parent != item or file.suffix.lower() not in suffixes:
                    result.skip(system_dir.name, name, f"not a {' or '.join(suffixes)} file directly in {item.name}/")
                    continue
                found.append((system_dir.name, code, file, name))
    return found


def _canonical_first(path: Path) -> tuple[bool, str]:
    """``Education/`` before ``education/``: the canonically named folder is the one merged into."""
    code = discipline_code(path.name)
    return (code is None or path.name != DISCIPLINES[code][0], path.name)


def _compact(name: str) -> str:
    """Letters and digits only: ``heavy–heavy`` and ``heavyheavy`` are one name."""
    return re.sub(r"[^a-z0-9]", "", slugify_key(name))


def _misfiled(files: list[tuple[str, str, Path, str]], *, result: ImportResult) -> list[tuple[str, str, Path, str]]:
    """A system's file whose topic name the same system also has in another discipline folder,
    where no other system has that topic (AutoSurvey2's Business topics, again under Biology/):
    skipped, named with the folder it belongs to."""
    places: dict[tuple[str, str], set[str]] = {}  # (system, name) → discipline codes
    codes_of_name: dict[str, dict[str, set[str]]] = {}  # name → code → systems
    for system, code, path, _ in files:
        if system.lower() == HUMAN:
            continue
        name = _compact(clean_name(path.stem))
        places.setdefault((system, name), set()).add(code)
        codes_of_name.setdefault(name, {}).setdefault(code, set()).add(system)
    kept = []
    for entry in files:
        system, code, path, shown = entry
        name = _compact(clean_name(path.stem))
        codes = places.get((system, name), set())
        if len(codes) > 1:
            home = max(codes, key=lambda c: (len(codes_of_name[name][c]), c))
            if code != home:
                result.skip(system, shown, f"{system} has this topic in {DISCIPLINES[home][0]}/ too, where the other "
                                           f"systems have it: filed under the wrong discipline")
                continue
        kept.append(entry)
    return kept


def _unmojibake(stem: str, shown: str, *, result: ImportResult) -> str:
    """A file name whose UTF-8 bytes were once decoded as GBK (``meta鈥恆nalyses`` for
    ``meta‐analyses``, one human survey's ``_split.json``) is read as the name it was."""
    try:
        fixed = stem.encode("gbk").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return stem
    if fixed != stem:
        result.messages.append(f"{shown}: file name read as {fixed!r} (its UTF-8 bytes had been decoded as GBK)")
    return fixed


_ABBREVIATIONS = {"ai": {"artificial", "intelligence"}, "llm": {"large", "language", "models"},
                  "llms": {"large", "language", "models"}}


def _expanded(words: set[str]) -> set[str]:
    """``AI in marketing`` meets ``Artificial Intelligence in Psychological Research``."""
    return set().union(*(_ABBREVIATIONS.get(w, {w}) for w in words)) if words else set()


def _overlap(a: str, b: str) -> int:
    """Content words two names share, a word meeting its longer form (``nano``/``nanotechnology``)."""
    left, right = _expanded(_content_words(a)), _expanded(_content_words(b))
    return sum(1 for w in left if any(w == v or (min(len(w), len(v)) >= 4 and (w.startswith(v) or v.startswith(w)))
                                      for v in right))


def _groups(files: list[tuple[str, str, Path, str]], *, result: ImportResult) -> list[Group]:
    from difflib import SequenceMatcher

    from scipy.optimize import linear_sum_assignment

    by_name: dict[tuple[str, str], Group] = {}
    humans: dict[tuple[str, str], Group] = {}
    for system, code, path, shown in _misfiled(files, result=result):
        name = clean_name(_unmojibake(path.stem, shown, result=result))
        if system.lower() == HUMAN:
            group = humans.setdefault((code, _compact(name)), Group(name, code, human=HumanSurvey()))
            slot = "text" if path.suffix.lower() == ".md" else "ssr"
            first = getattr(group.human, slot)
            if first is not None:
                result.skip(system, shown, f"a second human-written survey for {name!r}; {first[1]} was read")
                continue
            setattr(group.human, slot, (path, shown))
        else:
            by_name.setdefault((code, _compact(name)), Group(name, code)).files.append((system, path, shown))
    # 1. names cut short (SciSage's ``..._in_Developing_Coun_paper``) join the one topic they begin
    for code, name in sorted(by_name, key=lambda k: -len(k[1])):  # longest first: chains of cuts collapse
        longer = [k for k in by_name if k[0] == code and k[1] != name and k[1].startswith(name)]
        if len(name) >= _CUT and len(longer) == 1:
            by_name[longer[0]].files.extend(by_name.pop((code, name)).files)
    # 2. files named after a human title (cut short and stamped) join that human survey
    for (code, name), human in humans.items():
        for key in [k for k in by_name if k[0] == code and len(k[1]) >= 20 and name.startswith(k[1])]:
            human.files.extend(by_name.pop(key).files)
    # 3. within a discipline, each human survey joins one topic: the assignment sharing the most
    #    content words (at least one), ties broken by character similarity; never a topic that a
    #    system of the human's group also wrote on
    for code in sorted({c for c, _ in humans}):
        people = [k for k in humans if k[0] == code]
        topics = [k for k in by_name if k[0] == code]
        if not topics:
            continue
        def score_of(human: Group, topic: Group) -> float:
            if {s for s, _, _ in human.files} & {s for s, _, _ in topic.files}:
                return 0.0  # a system already on both sides: two topics, not one
            return (_overlap(human.name, topic.name) * 10
                    + SequenceMatcher(None, human.name.lower(), topic.name.lower()).ratio())

        score = [[score_of(humans[h], by_name[t]) for t in topics] for h in people]
        for i, j in zip(*linear_sum_assignment(score, maximize=True)):
            if score[i][j] < 10:
                continue
            topic, human = by_name[topics[j]], humans.pop(people[i])
            topic.files.extend(human.files)
            topic.human = human.human
            topic.name = topic.name if topic.files else human.name
    return list(by_name.values()) + list(humans.values())


def _read(read, system: str, shown: str, *, result: ImportResult):
    """One file's content, or ``None`` with the file skipped and the reason named: one bad file
    of a published tree does not refuse the rest."""
    try:
        value = read()
    except ImportFailed as exc:
        result.skip(system, shown, f"unreadable: {exc.location()}{exc.message}".replace(f"{shown}, ", "", 1))
        return None
    result.add("file", "read")
    return value


def _without_nul(value, removed: list[int]):
    """``value`` with its NUL characters removed (PostgreSQL text cannot hold them), counted."""
    if isinstance(value, str):
        removed[0] += value.count("\x00")
        return value.replace("\x00", "")
    if isinstance(value, list):
        return [_without_nul(v, removed) for v in value]
    if isinstance(value, dict):
        return {k: _without_nul(v, removed) for k, v in value.items()}
    return value


def _nul_report(removed: int, shown: str, *, result: ImportResult) -> None:
    if removed:
        result.add("NUL character", "removed", removed)
        result.messages.append(f"{shown}: {removed} NUL characters removed (text cannot hold them); the rest was read")


def _survey_ssr(path: Path, shown: str, *, result: ImportResult) -> dict:
    removed = [0]
    ssr = _without_nul(_ssr(path, "", name=shown)[1], removed)
    _nul_report(removed[0], shown, result=result)
    return ssr


def _markdown(path: Path, shown: str, *, result: ImportResult) -> str:
    size = path.stat().st_size
    if size > settings.IMPORT_MAX_LINE_BYTES:
        raise ImportFailed(f"file of {size:,} bytes exceeds the {settings.IMPORT_MAX_LINE_BYTES:,}-byte limit",
                           file=shown)
    raw = path.read_bytes()
    _nul_report(raw.count(b"\x00"), shown, result=result)
    return decode_text(raw.replace(b"\x00", b""), file=shown)


def _human_row(group: Group, key: str, discipline_id: int, *, result: ImportResult) -> dict:
    human, markdown, title = None, "", group.name
    if group.human is None:
        result.messages.append(f"{group.name!r} ({DISCIPLINES[group.code][0]}): no human-written survey in Human/")
        return human_survey_row(key, None, "", title=title, discipline_id=discipline_id)
    if group.human.ssr is not None:
        path, shown = group.human.ssr
        human = _read(lambda: _survey_ssr(path, shown, result=result), HUMAN_FOLDER, shown, result=result)
        title = clean_name(path.stem)
    if group.human.text is not None:
        path, shown = group.human.text
        markdown = _read(lambda: _markdown(path, shown, result=result), HUMAN_FOLDER, shown, result=result) or ""
        title = clean_name(path.stem)
    row = human_survey_row(key, human, markdown, title=title, discipline_id=discipline_id)
    if human is not None and markdown:
        row["full_text"] = markdown  # the published text; the SSR gives outline, sections and references
    return row


def import_processed(root: Path, *, base: Path, result: ImportResult) -> None:
    files = _scan(root, base, result=result)
    if not files:
        raise ImportFailed("no <System>/<Discipline>/<file>.json survey files",
                           file=root.relative_to(base.parent).as_posix())
    groups = sorted(_groups(files, result=result), key=lambda g: (g.code, g.name))
    disciplines = disciplines_ensure(SOURCE, {g.code: DISCIPLINES[g.code][0] for g in groups}, result=result)
    total = sum(len(g.files) + (g.human is not None) for g in groups)
    done = 0
    result.progress(done, total)
    for group in groups:
        key = topic_key(group.name, slugify_key(group.name))
        task = topic_task_store(key=key, topic=group.name,
                                survey_row=_human_row(group, key, disciplines[group.code].pk, result=result),
                                result=result)
        done += group.human is not None
        result.progress(done, total)
        read: dict[str, str] = {}  # system → the file read
        for system, path, shown in group.files:
            if system in read:
                result.skip(system, shown, f"a second {system} survey on {group.name!r}; {read[system]} was read")
                continue
            # one report at a time: the SSR, its markdown and its parse are freed before the next
            ssr = _read(lambda: _survey_ssr(path, shown, result=result), system, shown, result=result)
            if ssr is not None:
                read[system] = shown
                topic_report_store(task=task, system=system, ssr=ssr, where=shown, result=result)
            done += 1
            result.progress(done, total)
