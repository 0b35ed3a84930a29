"""A survey's text from markdown: parsed into abstract, outline and sections, stored with its revision;
bad input names file, line and field and stores nothing."""

import pytest
from django.contrib.contenttypes.models import ContentType
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from benchmark.importers.base import ImportFailed
from benchmark.models import Survey
from benchmark.services.survey_text import survey_text_parse, survey_text_set
from core.models import AuditLog
from scoring.services.proposals import VARIABLES, UnitFailed
from tests.annotation_factories import annotator, curator
from tests.factories import SurveyFactory, TaskFactory

pytestmark = pytest.mark.django_db

SURVEY_MD = """Self-supervised learning learns representations from unlabeled data.

# Introduction
Why labels are costly.

## Pretext tasks
Rotation and jigsaw.

```python
# not a heading inside code
```

# Contrastive learning
SimCLR and MoCo.
"""


def _revisions(survey):
    return AuditLog.objects.filter(content_type=ContentType.objects.get_for_model(Survey), object_id=survey.pk)


def test_markdown_becomes_abstract_outline_and_sections():
    text = survey_text_parse(SURVEY_MD.encode(), file="ssl.md")
    assert text.abstract == "Self-supervised learning learns representations from unlabeled data."
    assert text.outline == [[1, "Introduction"], [2, "Pretext tasks"], [1, "Contrastive learning"]]
    assert [(s["heading"], s["level"]) for s in text.content] == [
        ("Introduction", 1), ("Pretext tasks", 2), ("Contrastive learning", 1)]
    assert "# not a heading inside code" in text.content[1]["text"]
    assert text.content[2]["text"] == "SimCLR and MoCo."
    # A section headed "Abstract" is the abstract, not an outline entry.
    titled = survey_text_parse(b"# Abstract\nShort.\n# Methods\nLong.", file="a.md")
    assert (titled.abstract, titled.outline) == ("Short.", [[1, "Methods"]])


@pytest.mark.parametrize("data, match", [
    (b"# Intro\n\xff\xfe", r"^s\.md, line 2: is not UTF-8 text"),
    (b"just prose, no heading", r"^s\.md, line 1, field 'outline': no section heading"),
    (b"# Intro\ntext\n##   \nmore", r"^s\.md, line 3, field 'heading': a heading without a title"),
    (b"# Intro\n\x00", r"^s\.md, line 2: contains a NUL character"),
])
def test_unreadable_markdown_names_file_line_and_field(data, match):
    with pytest.raises(ImportFailed, match=match):
        survey_text_parse(data, file="s.md")


def test_stored_text_feeds_the_proposal_stages_and_leaves_a_revision():
    task = TaskFactory(protocol="deepsynth", survey=SurveyFactory(title="SSL", abstract="", outline=[], content=[]))
    with pytest.raises(UnitFailed, match="neither an outline nor content"):
        VARIABLES["topic_groups"](task)
    user = curator()
    assert survey_text_set(survey=task.survey, text=survey_text_parse(SURVEY_MD.encode(), file="ssl.md"), actor=user,
                           note="uploaded ssl.md")
    task.survey.refresh_from_db()
    variables = VARIABLES["topic_groups"](task)
    assert variables["outline"] == "# Introduction\n## Pretext tasks\n# Contrastive learning"
    assert "SimCLR and MoCo." in variables["content"]
    assert VARIABLES["question"](task)["abstract"].startswith("Self-supervised learning")
    revision = _revisions(task.survey).get()
    assert (revision.action, revision.actor, revision.before["outline"]) == ("survey.text", user, [])
    assert revision.after["outline"][0] == [1, "Introduction"]
    # The same text again changes nothing and writes no revision.
    assert not survey_text_set(survey=task.survey, text=survey_text_parse(SURVEY_MD.encode(), file="ssl.md"))
    assert _revisions(task.survey).count() == 1


def test_task_page_upload_by_curator_stores_it_and_bad_files_store_nothing(client):
    task = TaskFactory(protocol="deepsynth", survey=SurveyFactory(abstract="Kept abstract.", outline=[], content=[]))
    url = reverse("benchmark:task_survey_text", args=[task.pk])
    client.force_login(annotator("ann"))
    assert client.post(url, {"file": SimpleUploadedFile("s.md", SURVEY_MD.encode())}).status_code == 403
    client.force_login(curator())
    page = client.get(reverse("benchmark:task_detail", args=[task.pk])).content.decode()
    assert 'id="survey-text"' in page and 'id="no-survey-text"' in page

    bad = client.post(url, {"file": SimpleUploadedFile("broken.md", b"# Intro\n##\n")}, follow=True)
    assert "Nothing was stored: broken.md, line 2, field &#x27;heading&#x27;" in bad.content.decode()
    task.survey.refresh_from_db()
    assert task.survey.outline == [] and not _revisions(task.survey).exists()

    done = client.post(url, {"file": SimpleUploadedFile("ssl.md", SURVEY_MD.encode()), "keep_abstract": "on"},
                       follow=True).content.decode()
    assert "Survey text from ssl.md: 3 headings, 3 sections, an abstract." in done
    assert "Outline (3 headings)" in done and 'id="no-survey-text"' not in done
    task.survey.refresh_from_db()
    assert task.survey.abstract == "Kept abstract." and task.survey.outline[2] == [1, "Contrastive learning"]
