"""What an operator sets for the agent loop, and the frame it gives every request.

The frame (system prompt, tools, model, token limits, cache lifetime) is the frozen
prefix of each request of a session: it depends on these settings, the session's own
(which may narrow them) and the catalog of skills, never on the session's events.
"""

from __future__ import annotations

from dataclasses import dataclass

from domain.context import ContextFrame
from domain.conversation import CacheTtl, ToolSpec
from domain.values import SessionSettings

SYSTEM_PROMPT = """You are TokenDance, an autonomous agent that works for the user step by step.

Rules:
- Plan first: keep a short plan with update_plan, and mark each step done when it is.
- Record what you learn with record_finding, with its sources (url and title).
- Note what you did, and what failed, with note_progress.
- A tool error stays in the conversation: read it, and do not repeat the same failing call.
- When the task is done, answer the user directly, citing your sources."""

COMPACTION_PROMPT = (
    "Summarize the conversation so far for yourself, to continue the task from it: the "
    "user's goal, the plan and its status, every finding with its sources, what was "
    "tried and failed, and what remains. Be complete and concise."
)


@dataclass(frozen=True)
class EngineSettings:
    """Limits and defaults of the loop (a session's settings may narrow them)."""

    model: str | None = None
    # Models that take over, in order, a call the model could not serve for want of capacity.
    model_fallback: tuple[str, ...] = ()
    max_tokens: int | None = None
    context_window: int = 200_000
    max_iterations: int = 30
    reboot_after: int = 8
    thinking_budget: int = 0  # extended thinking per turn, in tokens (0: off); a session's wins
    system_prompt: str = SYSTEM_PROMPT
    cache_ttl: CacheTtl = "5m"
    snapshot_every: int = 100  # events between snapshots of a run's folded log


def frame_of(
    engine: EngineSettings, session: SessionSettings, specs: tuple[ToolSpec, ...], catalog: str
) -> ContextFrame:
    """The frame of a session's requests: `specs` are the registry's tools, `catalog` the
    skills the model may take up ("" for none)."""
    system = engine.system_prompt
    if session.allowed_tools is not None:
        allowed = ", ".join(session.allowed_tools)
        system += f"\n\nIn this session you may only use these tools: {allowed}"
        specs = tuple(s for s in specs if s.name in session.allowed_tools)  # others refused
    model = session.model or engine.model
    if catalog:
        system += f"\n\n{catalog}"
    return ContextFrame(
        system=system,
        tools=specs,
        model=str(model) if model else None,
        max_tokens=engine.max_tokens,
        thinking_budget=(
            engine.thinking_budget if session.thinking_budget is None else session.thinking_budget
        ),
        cache_ttl=engine.cache_ttl,
    )
