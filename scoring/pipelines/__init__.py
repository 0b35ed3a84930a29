"""Evaluation pipelines, one per protocol: the interface and registry are in ``base``."""

from .base import PIPELINES, Pipeline, pipeline_for

__all__ = ["PIPELINES", "Pipeline", "pipeline_for"]
