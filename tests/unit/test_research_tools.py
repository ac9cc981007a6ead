"""The research tools as the engine runs them: failures kept with what the model needs.

A refused URL is a kept failure carrying `URL_NOT_ALLOWED`; with no search key,
`web_search` says search is not configured. No network is touched.
"""

from __future__ import annotations

from pathlib import Path

from domain.session import AgentSession as S
from tests.fakes.engine import make_engine, scripted
from tests.unit.test_replay_and_fork import call


async def test_refused_urls_and_unconfigured_search_are_kept_failures(tmp_path: Path) -> None:
    llm = scripted(
        {"tool_calls": [
            call("read_url", "r1", url="http://127.0.0.1:9/admin"),
            call("read_url", "r2", url="http://169.254.169.254/latest/meta-data/"),
            call("read_url", "r3", url="file:///etc/passwd"),
            call("web_search", "w1", query="AI agent market"),
        ]},
        {"text": "I cannot reach those."},
    )  # fmt: skip
    engine = make_engine(llm, tmp_path)
    sid = await engine.new_session()
    await engine.scheduler.send_message(sid, "research")
    assert await engine.scheduler.wait(sid) == "completed"

    results = {
        e.tool_use_id: e
        for e in engine.sessions.session_events(sid)
        if isinstance(e, S.ToolResultRecorded)
    }
    for refused in ("r1", "r2", "r3"):
        assert results[refused].status == "error"
        assert (results[refused].error or "").startswith("URL_NOT_ALLOWED: "), results[refused]
    assert "169.254.169.254" in (results["r2"].error or "")
    assert "web search is not configured: set TAVILY_API_KEY" in (results["w1"].error or "")
