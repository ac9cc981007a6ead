"""`code_execute` through the API, as a person runs it by hand: under the default
policy it waits for approval (202 and an action id) and runs once approved (the
approval's answer carries its output); run
directly, its answer's `result` is the object `{exit_code, duration_ms, stdout, stderr,
files}` and the file it wrote is in the workspace and downloads as an artifact.
"""

from __future__ import annotations

import shutil

import pytest
from litestar.testing import TestClient

from tests.integration.test_artifacts_api import sign_up

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed"),
]

Client = TestClient  # type: ignore[type-arg]
CODE = """
import csv
rows = list(csv.DictReader(open("sales.csv")))
total = sum(int(r["amount"]) for r in rows)
open("total.md", "w").write(f"# Total\\n\\n{total}\\n")
print(total)
"""


def test_code_execute_by_hand_asks_first_then_answers_its_output_and_files(
    client: Client,
) -> None:
    alice, workspace = sign_up(client, "alice@example.com")
    uploaded = client.post(
        f"/api/v1/workspaces/{workspace}/files",
        files={"file": ("sales.csv", b"month,amount\n1,10\n2,32\n", "text/csv")},
        headers=alice,
    )
    assert uploaded.status_code == 201, uploaded.text
    careful = client.post("/api/v1/sessions/", json={"workspace_id": workspace}, headers=alice)
    execute = "/api/v1/mcp/tools/code_execute/execute"
    args = {"code": CODE}

    asked = client.post(
        execute, json={"session_id": careful.json()["id"], "args": args}, headers=alice
    )
    assert asked.status_code == 202, asked.text
    assert asked.json()["status"] == "confirm_required" and asked.json()["action_id"]
    files = client.get(f"/api/v1/workspaces/{workspace}/files", headers=alice).json()["items"]
    assert [f["path"] for f in files] == ["sales.csv"], "nothing ran before approval"

    trusting = client.post(
        "/api/v1/sessions/",
        json={"workspace_id": workspace, "settings": {"confirmation": "never"}},
        headers=alice,
    )
    ran = client.post(
        execute, json={"session_id": trusting.json()["id"], "args": args}, headers=alice
    )
    assert ran.status_code == 200, ran.text
    result = ran.json()["result"]
    assert isinstance(result, dict), result
    assert (result["exit_code"], result["stdout"].strip(), result["stderr"]) == (0, "42", "")
    assert isinstance(result["duration_ms"], int)
    (written,) = result["files"]
    assert written["path"] == "total.md" and written["saved_to_workspace"] is True
    download = client.get(f"/api/v1/artifacts/{written['artifact_id']}/download", headers=alice)
    assert download.status_code == 200 and download.text == "# Total\n\n42\n"

    bad = client.post(
        execute,
        json={"session_id": trusting.json()["id"], "args": {"code": "print(", "timeout": 0}},
        headers=alice,
    )
    assert bad.status_code == 200 and bad.json()["status"] == "error", bad.text
    assert "Expected `int` >= 1" in bad.json()["error"]

    # The first call, approved, has run when the answer comes: the answer carries its output.
    approved = client.post(
        f"/api/v1/chat/{careful.json()['id']}/confirm",
        json={"action_id": asked.json()["action_id"], "confirmed": True},
        headers=alice,
    )
    assert approved.status_code == 200, approved.text
    assert "code_execute ran" in approved.json()["next_action"], approved.json()
    ran_by_hand = approved.json()["tool_result"]
    assert ran_by_hand["tool_call_id"] == asked.json()["tool_call_id"]
    assert ran_by_hand["status"] == "success", ran_by_hand
    assert (ran_by_hand["result"]["exit_code"], ran_by_hand["result"]["stdout"].strip()) == (
        0, "42",
    )  # fmt: skip
