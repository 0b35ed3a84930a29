"""Small, valid variables for every step (the shapes pipelines send)."""

REPORT = """# Semantic SLAM

Semantic SLAM adds object labels to geometric maps [1]. KITTI was published in 2012 and records driving scenes
with a Velodyne-64 LiDAR (https://www.cvlibs.net/datasets/kitti/). ORB-SLAM2 is a keyframe-based system that runs
in real time on a CPU. Mask R-CNN reached 37.1% mask AP on COCO in 2017.

| Dataset | Year | Citations |
|---|---|---|
| KITTI | 2012 | 8651 |
| TUM RGB-D | 2012 | 2670 |

## References
1. Geiger, A. (2012). Are we ready for autonomous driving? The KITTI vision benchmark suite. https://example.org/kitti
2. "ORB-SLAM2: an open-source SLAM system for monocular, stereo and RGB-D cameras" https://arxiv.org/abs/1610.06475
"""

CRITERIA = [{"id": 1, "name": "Coverage", "description": "Covers the main datasets and systems of the field."},
            {"id": 2, "name": "Structure", "description": "Sections go in a logical order from basics to uses."}]

SAMPLES = {
    "deepsynth.checklist_group": {
        "report": REPORT, "group_name": "Datasets", "constraint_question": "",
        "items": [{"id": 1, "text": "The article should mention that KITTI was published in 2012."},
                  {"id": 2, "text": "The article should discuss underwater sonar mapping."}],
    },
    "reportbench.cited_statements": {"report": REPORT},
    "reportbench.support_passage": {
        "statement": "KITTI was published in 2012.", "source_title": "KITTI",
        "source_text": "We present KITTI. The benchmark was released in 2012. It has cars."},
    "reportbench.consistency": {"statement": "KITTI was published in 2012.", "passage": "KITTI appeared in 2012."},
    "reportbench.uncited_statements": {"report": REPORT},
    "reportbench.factuality": {"statement": "ORB-SLAM2 runs in real time on a CPU."},
    "reportbench.reference_titles": {"report": REPORT},
    "reportbench.academic_reference": {"title": "Vision meets robotics: the KITTI dataset",
                                       "url": "https://doi.org/10.1177/0278364913491297", "content": ""},
    "deepscholar.nuggetize": {"query": "semantic SLAM datasets", "text": REPORT},
    "deepscholar.nugget_support": {"report": REPORT, "nuggets": [{"id": "n1", "text": "KITTI was published in 2012."},
                                                                 {"id": "n2", "text": "Sonar maps the sea floor."}]},
    "deepscholar.relevance": {"query": "semantic SLAM", "document": "A survey of semantic mapping for robots."},
    "deepscholar.reference_importance": {"query": "semantic SLAM", "document": "ORB-SLAM2: an open-source system."},
    "deepscholar.citation_support": {"sentence": "KITTI was published in 2012 [1].",
                                     "source": "The KITTI benchmark was published in 2012."},
    "deepscholar.organization": {"query": "semantic SLAM", "report_a": REPORT, "report_b": "SLAM. Maps. Robots."},
    "surveylens.rubric": {"component": "content", "survey": REPORT, "criteria": CRITERIA},
    "scisage.quality": {"survey": REPORT, "dimensions": CRITERIA},
    "scisage.section_structure": {"survey": REPORT, "dimensions": [
        {"id": "section_structure", "name": "Section-level structure", "description": "Coherence and flow."}]},
    "survey.pairwise": {"topic": "semantic SLAM", "survey_a": REPORT, "survey_b": "Cooking pasta takes ten minutes."},
    "propose.general_question": {"title": "A Survey on Semantic Visual SLAM",
                                 "abstract": "We review semantic visual SLAM: datasets, systems and open problems."},
    "propose.topic_groups": {"survey_title": "Semantic SLAM", "outline": "1 Introduction\n2 Datasets\n2.1 Driving\n"
                             "2.2 Indoor\n3 Systems\n3.1 ORB-SLAM2\n4 Conclusion", "content": REPORT},
    "propose.constraint_pairs": {"survey_title": "Semantic SLAM", "outline": "1 Datasets", "content": REPORT},
    "propose.reportbench_prompts": {"title": "A Survey on Semantic Visual SLAM", "cutoff_date": "September 2022",
                                    "abstract": "We review semantic visual SLAM datasets and semantic visual systems."},
    "propose.rubric_criteria": {"discipline": "Robotics", "survey_title": "Semantic SLAM", "outline": "1 Datasets"},
}
