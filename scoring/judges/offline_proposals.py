"""The offline judge's steps that propose benchmark content.

* ``deepscholar.nuggetize``: up to ``nugget_count`` salient sentences (centrality plus a bonus per
  checkable term, kept in document order), the top ``vital_fraction`` of them vital.
* ``propose.general_question``, ``propose.reportbench_prompts``: templates filled with the topic
  from the title and key phrases of the abstract. ``propose.topic_groups``: one group per
  top-level section of the outline (introduction, conclusion and the like left out), items from
  its subsections. ``propose.constraint_pairs``: one pair per markdown table in the content.
"""

from __future__ import annotations

import re

from . import lexical
from .offline_claims import round4

_FRONT_BACK_MATTER = re.compile(r"^(abstract|introduction|conclusions?|concluding remarks|summary|references|"
                                r"bibliography|acknowledg(e)?ments?|appendix|appendices)\b", re.IGNORECASE)


def deepscholar_nuggetize(judge, query, text):
    sentences = [lexical.strip_citations(s) for s in lexical.split_sentences(text)]
    sentences = [s for s in dict.fromkeys(sentences) if len(lexical.tokens(s)) >= 4]
    if not sentences:
        return {"nuggets": []}
    vectors = judge.vectors_of(sentences)
    centrality = (vectors @ vectors.T).mean(axis=1)
    query_sim = vectors @ judge.vectors_of([query])[0]
    scores = [round4(centrality[i] + 0.5 * query_sim[i] + 0.02 * min(len(lexical.evidence(s).terms), 5))
              for i, s in enumerate(sentences)]
    count = int(judge.thresholds["nugget_count"])
    ranked = sorted(range(len(sentences)), key=lambda i: (-scores[i], i))[:count]
    vital = set(ranked[: max(1, round(len(ranked) * judge.thresholds["vital_fraction"]))])
    return {"nuggets": [{"text": sentences[i], "importance": "vital" if i in vital else "okay"}
                        for i in ranked]}


def _topic(title: str) -> str:
    topic = re.sub(r"^\s*(a|an|the)?\s*(comprehensive|systematic|brief|short)?\s*(survey|review|overview|"
                   r"tutorial|primer)\s+(of|on|for)\s+", "", title, flags=re.IGNORECASE)
    topic = re.sub(r"\s*[:\-]\s*(a|an)?\s*(comprehensive|systematic)?\s*(survey|review|overview)\s*$", "", topic,
                   flags=re.IGNORECASE)
    return topic.strip(" .") or title.strip()


def _key_phrases(text: str, limit: int = 4) -> list[str]:
    words = [w for w in re.findall(r"[A-Za-z][A-Za-z\-]+", lexical.normalize(text))]
    counts: dict[str, int] = {}
    for first, second in zip(words, words[1:]):
        if first.lower() in lexical.STOPWORDS or second.lower() in lexical.STOPWORDS:
            continue
        if len(first) < 3 or len(second) < 3:
            continue
        phrase = f"{first.lower()} {second.lower()}"
        counts[phrase] = counts.get(phrase, 0) + 1
    return [p for p, _ in sorted(counts.items(), key=lambda kv: (-kv[1], list(counts).index(kv[0])))][:limit]


def propose_general_question(judge, title, abstract):
    return {"question": f"Please write a comprehensive survey of {_topic(title)} based on the provided "
                        "papers, covering its main methods, open challenges and future directions."}


def propose_reportbench_prompts(judge, title, abstract, cutoff_date):
    topic = _topic(title)
    phrases = ", ".join(_key_phrases(abstract)) or topic
    rules = (f"Only cite works published before {cutoff_date}, and do not cite the survey titled "
             f"\"{title}\" itself.")
    return {
        "sentence": f"Write a survey of research on {topic}. {rules}",
        "paragraph": f"Write a survey of research on {topic}, covering its main subtopics and methods, "
                     f"including {phrases}. {rules}",
        "detail": f"Write a detailed survey of {topic}: describe the research domain, the key research "
                  f"directions and the methodological approaches of interest, such as {phrases}, and compare "
                  f"them critically, in English. {rules}",
    }


def propose_topic_groups(judge, survey_title, outline, content):
    heads = lexical.headings(outline) or lexical.headings(content)
    if not heads:
        return {"groups": []}
    top = min(level for level, _ in heads)
    groups: list[dict] = []
    current = None
    for level, title in heads:
        clean = re.sub(r"^(?:\d+(?:\.\d+)*|[IVXLC]+)[.)]?\s+", "", title).strip()
        if level == top:
            current = None if _FRONT_BACK_MATTER.match(clean) else {"name": clean, "items": []}
            if current:
                groups.append(current)
        elif current is not None and clean:
            current["items"].append(f"The report should discuss {clean}.")
    return {"groups": [g for g in groups if g["items"]]}


def propose_constraint_pairs(judge, survey_title, outline, content):
    pairs, caption, rows, header = [], "", [], None
    lines = lexical.normalize(content).splitlines() + [""]
    for i, line in enumerate(lines):
        stripped = line.strip()
        if stripped.startswith("|"):
            if lexical.TABLE_SEPARATOR.match(stripped):
                continue
            cells = lexical.table_row(stripped)
            if header is None:
                header = cells
            else:
                rows.append(cells)
            continue
        if header is not None:
            items = [
                "In the table, report that " + cells[0] + " has "
                + "; ".join(f"{h}: {c}" for h, c in zip(header[1:], cells[1:]) if c) + "."
                for cells in rows if cells and cells[0] and len(cells) == len(header)
            ]
            if items:
                name = caption or f"table {len(pairs) + 1}"
                question = (f"Include a table ({name}) comparing each {header[0].lower() or 'entry'} by "
                            f"{', '.join(h for h in header[1:] if h)}.")
                pairs.append({"anchor": f"table: {name}", "question": question, "items": items})
            header, rows = None, []
        if stripped:
            caption = re.sub(r"^#+\s*", "", stripped)[:120]
    return {"pairs": pairs}


HANDLERS = {
    "deepscholar.nuggetize": deepscholar_nuggetize,
    "propose.general_question": propose_general_question,
    "propose.reportbench_prompts": propose_reportbench_prompts,
    "propose.topic_groups": propose_topic_groups,
    "propose.constraint_pairs": propose_constraint_pairs,
}
