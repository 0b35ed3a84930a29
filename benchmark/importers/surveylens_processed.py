"""SurveyLens' published results tree: ``results/processed/<System>/<Discipline>/<file>_split.json``.

``path`` may be the repository root, ``results/`` or ``results/processed/``. Each system folder
holds one folder per discipline, each file one survey in the Structured Survey Representation.
The ``Human`` folder (optional) holds the human-written surveys, as SSR ``.json`` or ``.md``.

File names are the topic the system was given (``survey_`` prefixes, ``_paper`` suffixes,
underscores and ``_split`` aside), except that some systems (and the human files) are named
after the human survey's title, cut short and stamped (``10_Brightening_up_..._for_i_20251226_
072540``). So a topic is found in three steps, within one discipline:

1. files with the same cleaned name are one topic;
2. a file whose cleaned name begins the cleaned name of a human file joins that human file;
3. a human file's group joins the topic group whose name shares the most content words with
   the human title (at least two); without one it stays a topic of its own, titled after it.

A topic's task is the existing one when a label file or another import introduced it (see
``surveylens.topic_tasks``), else keyed by the topic's slug. Two files of one system on one
topic, an unknown discipline folder or a file outside ``<System>/<Discipline>/`` are reported.
"""

import re
from dataclasses import dataclass, field
from pathlib import Path

from .base import ImportFailed, ImportResult
from .common import disciplines_ensure, read_text, slugify_key
from .surveylens import (
    DISCIPLINES,
    SOURCE,
    _ssr,
    discipline_code,
    human_survey_row,
    topic_key,
    topic_store,
)
from .surveylens import _content_words

HUMAN = "human"
_STAMP = re.compile(r"_\d{8}_\d{6}$")


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
    stem = re.sub(r"^survey_|_paper$", "", stem)
    return " ".join(stem.replace("_", " ").split())


@dataclass
class Group:
    name: str  # the topic, or the human title for a human-anchored group
    code: str
    files: list[tuple[str, Path, str]] = field(default_factory=list)  # (system, path, shown name)
    human: tuple[Path, str] | None = None


def _scan(root: Path, base: Path, *, result: ImportResult) -> list[tuple[str, str, Path, str]]:
    """``(system, discipline code, path, shown name)`` for every survey file."""
    found = []
    for system_dir in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        for item in sorted(p for p in system_dir.iterdir() if not p.name.startswith(".")):
            shown = item.relative_to(base).as_posix()
            if item.is_file():
                result.skip(system_dir.name, shown, "not in a <Discipline>/ folder")
                continue
            code = discipline_code(item.name)
            if code is None:
                known = ", ".join(n for n, _ in DISCIPLINES.values())
                raise ImportFailed(f"not a SurveyLens discipline (known: {known})", file=shown)
            for file in sorted(p for p in item.rglob("*") if p.is_file() and not p.name.startswith(".")):
                name = file.relative_to(base).as_posix()
                suffixes = (".json", ".md") if system_dir.name.lower() == HUMAN else (".json",)
                if file.parent != item or file.suffix.lower() not in suffixes:
                    result.skip(system_dir.name, name, f"not a {' or '.join(suffixes)} file directly in {item.name}/")
                    continue
                found.append((system_dir.name, code, file, name))
    return found


def _groups(files: list[tuple[str, str, Path, str]]) -> list[Group]:
    by_name: dict[tuple[str, str], Group] = {}
    humans: dict[tuple[str, str], Group] = {}
    for system, code, path, shown in files:
        name = clean_name(path.stem)
        if system.lower() == HUMAN:
            group = humans.setdefault((code, slugify_key(name)), Group(name, code))
            if group.human is not None:
                raise ImportFailed(f"a second human-written survey for {name!r}, after {group.human[1]}", file=shown)
            group.human = (path, shown)
        else:
            by_name.setdefault((code, slugify_key(name)), Group(name, code)).files.append((system, path, shown))
    # 2. truncated human titles join their human file
    for (code, slug), human in humans.items():
        for key in [k for k in by_name if k[0] == code and len(k[1]) >= 20 and slug.startswith(k[1])]:
            human.files.extend(by_name.pop(key).files)
    # 3. a human group joins the topic it shares most content words with
    for (code, _), human in humans.items():
        words = _content_words(human.name)
        scored = [(len(words & _content_words(g.name)), key) for key, g in by_name.items() if key[0] == code]
        best = max(scored, default=(0, None))
        if best[0] >= 2:
            topic = by_name[best[1]]
            topic.files.extend(human.files)
            topic.human = human.human
        else:
            by_name[(code, slugify_key(human.name))] = human
    return list(by_name.values())


def import_processed(root: Path, *, base: Path, result: ImportResult) -> None:
    files = _scan(root, base, result=result)
    if not files:
        raise ImportFailed("no <System>/<Discipline>/<file>.json survey files",
                           file=root.relative_to(base.parent).as_posix())
    groups = _groups(files)
    disciplines = disciplines_ensure(SOURCE, {g.code: DISCIPLINES[g.code][0] for g in groups}, result=result)
    for group in sorted(groups, key=lambda g: (g.code, g.name)):
        ssrs: dict[str, tuple[dict, str]] = {}
        for system, path, shown in group.files:
            if system in ssrs:
                raise ImportFailed(f"a second {system} survey on {group.name!r}, after {ssrs[system][1]}", file=shown)
            ssrs[system] = (_ssr(path, "", name=shown)[1], shown)
        human, markdown, title = None, "", group.name
        if group.human is not None:
            path, shown = group.human
            if path.suffix.lower() == ".md":
                markdown = read_text(path, name=shown)
            else:
                human = _ssr(path, "", name=shown)[1]
            title = clean_name(path.stem)
        else:
            result.messages.append(f"{group.name!r} ({DISCIPLINES[group.code][0]}): no human-written survey in Human/")
        key = topic_key(group.name, slugify_key(group.name))
        topic_store(
            key=key, topic=group.name,
            survey_row=human_survey_row(key, human, markdown, title=title, discipline_id=disciplines[group.code].pk),
            ssrs=ssrs, result=result,
        )

