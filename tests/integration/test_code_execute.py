"""`code_execute` and `run_skill_script` as the engine runs them, in the real bubblewrap
sandbox: approval first under the default policy, the workspace's files in, what the
code writes out as workspace files and artifacts, limits as kept failures that say which.
"""

from __future__ import annotations

import io
import json
import shutil
import zipfile
from pathlib import Path
from uuid import uuid4

import pytest

from adapters.http.streams.sse import payloads
from application.tools.code_execute import CodeExecute
from domain.authors import ByUser
from domain.session import AgentSession as S
from sandbox.bubblewrap import BubblewrapSandbox
from schemas import sse
from schemas.sandbox import SandboxLimits
from tests.fakes.engine import Engine, make_engine, scripted
from tests.unit.test_replay_and_fork import call, replay_of

pytestmark = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap is not installed (apt-get install bubblewrap)"
)

PLOT = """
import matplotlib.pyplot as plt
import pandas as pd
sales = pd.read_csv("sales.csv")
print(sales["amount"].sum())
sales.plot(x="month", y="amount")
plt.savefig("plot.png")
"""


def result_of(engine: Engine, sid: object, tool_use_id: str) -> S.ToolResultRecorded:
    (found,) = [
        e for e in engine.sessions.session_events(sid)  # type: ignore[arg-type]
        if isinstance(e, S.ToolResultRecorded) and e.tool_use_id == tool_use_id
    ]  # fmt: skip
    return found


async def test_approved_code_reads_the_workspace_and_its_png_comes_back_as_an_artifact(
    tmp_path: Path,
) -> None:
    llm = scripted(
        {"tool_calls": [call("code_execute", "c1", code=PLOT)]},
        {"text": "Plotted."},
    )
    engine = make_engine(llm, tmp_path)
    workspace = uuid4()
    csv = b"month,amount\n1,10\n2,32\n"
    await engine.files.write(workspace, "sales.csv", csv, "text/csv", ByUser(uuid4()))
    sid = await engine.new_session(workspace)  # default policy: risky tools ask first
    await engine.scheduler.send_message(sid, "plot my sales")
    assert await engine.scheduler.wait(sid) == "suspended"
    (asked,) = engine.events(sid, "ConfirmationRequested")
    assert isinstance(asked, S.ConfirmationRequested) and asked.tool == "code_execute"
    assert not engine.events(sid, "ToolResultRecorded"), "nothing runs before approval"

    await engine.scheduler.confirm(sid, asked.action_id, True, None, "alice")
    assert await engine.scheduler.wait(sid) == "completed"

    result = result_of(engine, sid, "c1")
    assert result.status == "success", result
    shown = json.loads(result.summary)
    assert shown["exit_code"] == 0 and shown["stdout"].strip() == "42"
    (png,) = [f for f in shown["files"] if f["path"] == "plot.png"]
    (artifact,) = engine.events(sid, "ArtifactCreated")
    assert isinstance(artifact, S.ArtifactCreated)
    assert (artifact.kind, artifact.name, artifact.media_type) == ("file", "plot.png", "image/png")
    assert artifact.tool_use_id == "c1"
    assert png["artifact_id"] and png["saved_to_workspace"] is True
    saved = await engine.files.read(workspace, "plot.png")
    assert saved.startswith(b"\x89PNG") and len(saved) == artifact.size
    (end,) = engine.events(sid, "RunCompleted")
    assert isinstance(end, S.RunCompleted) and [a.name for a in end.artifacts] == ["plot.png"]
    (done,) = payloads(end)
    assert isinstance(done, sse.Done) and done.artifacts

    report = await replay_of(engine, sid)
    assert report.identical, report.divergence


async def test_rejected_code_never_runs(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    llm = scripted(
        {"tool_calls": [call("code_execute", "c1", code=f"open({str(marker)!r}, 'w')")]},
        {"text": "Understood."},
    )
    engine = make_engine(llm, tmp_path)
    sid = await engine.new_session()
    await engine.scheduler.send_message(sid, "go")
    assert await engine.scheduler.wait(sid) == "suspended"
    (asked,) = engine.events(sid, "ConfirmationRequested")
    assert isinstance(asked, S.ConfirmationRequested)
    await engine.scheduler.confirm(sid, asked.action_id, False, "not now", "bob")
    assert await engine.scheduler.wait(sid) == "completed"
    assert result_of(engine, sid, "c1").status != "success"
    assert not (tmp_path / "sandbox").exists() or not any((tmp_path / "sandbox").iterdir())
    assert not marker.exists()


@pytest.mark.parametrize(
    ("args", "code", "said"),
    [
        ({"code": "print(("}, "SYNTAX_ERROR", "the code does not parse: '(' was never closed"),
        ({"code": "print(1)", "timeout": 3600}, "TIMEOUT_TOO_LONG", "above the maximum of 300"),
        ({"code": "print(1)", "timeout": 0}, None, "Expected `int` >= 1"),
        ({"code": "while True: pass", "timeout": 1}, "LIMIT_REACHED", "the time limit (1 s"),
        ({"code": "while True: print('x' * 100_000)"}, "LIMIT_REACHED", "the output limit"),
        ({"code": "import sys; sys.exit(3)"}, None, None),
    ],
)
async def test_bad_code_and_limits_are_kept_failures_that_say_why(
    tmp_path: Path, args: dict[str, object], code: str | None, said: str | None
) -> None:
    llm = scripted(
        {"tool_calls": [call("code_execute", "c1", **args)]},
        {"text": "Noted."},
    )
    engine = make_engine(llm, tmp_path)
    sid = await engine.new_session(confirmation="never")
    await engine.scheduler.send_message(sid, "run it")
    assert await engine.scheduler.wait(sid) == "completed"
    result = result_of(engine, sid, "c1")
    if said is None:  # a failing program is a result, not a failure of the tool
        assert result.status == "success" and json.loads(result.summary)["exit_code"] == 3
        return
    assert result.status == "error", result
    assert said in (result.error or ""), result.error
    if code is not None:
        assert (result.error or "").startswith(f"{code}: ")


async def test_a_skill_script_runs_with_its_arguments_and_only_its_output_is_kept(
    tmp_path: Path,
) -> None:
    skill = tmp_path / "skills" / "counter"
    (skill / "scripts").mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: counter\ndescription: Counts words in text given as arguments.\n---\n"
        "Run scripts/count.py with the words.\n"
    )
    (skill / "scripts" / "count.py").write_text(
        "import sys\nopen('left-behind.txt', 'w').write('x')\nprint(len(sys.argv) - 1)\n"
    )
    llm = scripted(
        {"tool_calls": [{"name": "activate_skill", "id": "a1", "input": {"name": "counter"}}]},
        {"tool_calls": [
            call("run_skill_script", "r1", path="scripts/count.py", args=["a", "b", "c"]),
            call("run_skill_script", "r2", path="../SKILL.md"),
        ]},
        {"text": "Three."},
    )  # fmt: skip
    engine = make_engine(llm, tmp_path, skills_dir=tmp_path / "skills")
    sid = await engine.new_session(confirmation="never")
    await engine.scheduler.send_message(sid, "count")
    assert await engine.scheduler.wait(sid) == "completed"
    ran = result_of(engine, sid, "r1")
    assert ran.status == "success", ran
    shown = json.loads(ran.summary)
    assert shown["stdout"].strip() == "3" and "files" not in shown
    refused = result_of(engine, sid, "r2")
    assert refused.status == "error" and "not in the skill's scripts or resources folder" in (
        refused.error or ""
    )


async def test_without_bubblewrap_the_tool_says_what_to_install(tmp_path: Path) -> None:
    missing = BubblewrapSandbox(tmp_path / "sandbox", bwrap="no-such-bwrap")
    tool = CodeExecute(missing, limits=SandboxLimits(), max_wall_seconds=60)
    llm = scripted(
        {"tool_calls": [call("code_execute", "c1", code="print(1)")]},
        {"text": "No sandbox."},
    )
    engine = make_engine(llm, tmp_path, extra_tools=[tool])
    sid = await engine.new_session(confirmation="never")
    await engine.scheduler.send_message(sid, "run it")
    assert await engine.scheduler.wait(sid) == "completed"
    result = result_of(engine, sid, "c1")
    assert result.status == "error"
    assert result.error == (
        "SANDBOX_UNAVAILABLE: bubblewrap is not installed: apt-get install bubblewrap"
    )


async def test_a_zip_bomb_among_the_workspace_files_is_stopped_when_unpacked(
    tmp_path: Path,
) -> None:
    """Nothing on the server unpacks an upload; code that does fills its work directory
    and is stopped at the disk limit, leaving nothing behind on the host."""
    bomb = io.BytesIO()
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive:
        for n in range(80):
            archive.writestr(f"zeros-{n}.bin", bytes(4 * 2**20))  # 320 MiB unpacked
    unpack = "import zipfile; zipfile.ZipFile('bomb.zip').extractall('out')"
    llm = scripted({"tool_calls": [call("code_execute", "c1", code=unpack)]}, {"text": "Hm."})
    engine = make_engine(llm, tmp_path)
    workspace = uuid4()
    await engine.files.write(workspace, "bomb.zip", bomb.getvalue(), None, ByUser(uuid4()))
    sid = await engine.new_session(workspace, confirmation="never")
    await engine.scheduler.send_message(sid, "unpack it")
    assert await engine.scheduler.wait(sid) == "completed"
    result = result_of(engine, sid, "c1")
    assert result.status == "error", result
    assert (result.error or "").startswith(
        "LIMIT_REACHED: the code was stopped: it reached the file size limit"
    )
    assert [f.path for f in await engine.files.list(workspace)] == ["bomb.zip"]
    assert not any((tmp_path / "sandbox").iterdir()), "the run's work directory is gone"
