"""The task API: a base class with its public hooks (``doc_to_text``, ...), docs, and few-shot
samplers."""

from mill.task.base import Task, TaskGroup
from mill.task.yaml_task import YamlTask
from mill.types import Doc

__all__ = ["Doc", "Task", "TaskGroup", "YamlTask"]
