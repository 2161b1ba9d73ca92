"""The arguments of ``create_memory`` (typed memories) as a pydantic model.

The model gives the tool's JSON schema; the ``create_memory`` flow still checks a call
itself (:mod:`kioku._memory.create_typed`, :func:`kioku._memory.typed.parse_typed`),
because it also takes the reference's older names (``type``, ``content``) and checks
each metadata field by memory type. ``tests/test_tool_schema.py`` keeps the two in step.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field

from kioku._memory.arguments import EVENT_TIME, Moment, ToolArguments

MemoryType = Literal["episodic", "semantic", "procedural", "strategic"]
"""The four memory types (:data:`kioku._memory.typed.MEMORY_TYPES`)."""


class CreateMemoryArgs(ToolArguments):
    """What ``create_memory`` advertises."""

    model_config = ConfigDict(title="create_memory")

    memory_type: Annotated[MemoryType, Field(description="Type of memory to create")]
    memory_content: Annotated[str, Field(description="The main content/text of the memory")]
    importance: Annotated[
        float,
        Field(
            ge=0,
            le=1,
            allow_inf_nan=False,
            description="Importance score (0.0 to 1.0), default 0.5",
        ),
    ] = 0.5
    event_time: Annotated[Moment, Field(description=EVENT_TIME)] = None
    metadata: Annotated[
        dict[str, Any] | None,
        Field(
            description=(
                "Type-specific metadata: episodic action_taken, context, result (any JSON), "
                "emotional_valence (-1..1), event_time (ISO 8601), verification_status "
                "(true/false); semantic "
                "confidence (0..1), category, related_concepts, source_references, "
                "contradictions; procedural steps (required), prerequisites, success_count, "
                "total_attempts, failure_points; strategic pattern_description, "
                "confidence_score (0..1), supporting_evidence, success_metrics, "
                "adaptation_history, context_applicability; any type: decay_rate (per day)."
            )
        ),
    ] = None
    embedding: Annotated[
        list[float] | None, Field(description="Ignored: kioku embeds the content itself.")
    ] = None
