"""Operation ids a code generator can name functions after: short camelCase verbs.

The rule: the handler's function name in camelCase (`create_session` -> `createSession`).
`OVERRIDES` names the handlers whose function name is not a verb with its object, or
is the same in two modules (`confirm`, `upload`, `download`, `search`); keyed by
`<module>.<function>`, so a renamed handler falls back to the rule. Litestar refuses
two operations with one id when it builds the document, and a test checks the form.
"""

from __future__ import annotations

from litestar.handlers import HTTPRouteHandler
from litestar.types import Method
from litestar.types.internal_types import PathParameterDefinition
from litestar.utils.helpers import unwrap_partial

OVERRIDES = {
    "ops.health": "getHealth",
    "ops.readiness": "getReadiness",
    "ops.metrics_endpoint": "getMetrics",
    "auth_routes.refresh": "refreshToken",
    "auth_routes.change_workspace": "updateWorkspace",
    "profile.me": "getMe",
    "profile.change_me": "updateMe",
    "teams.change_role": "changeMemberRole",
    "teams.accept": "acceptInvitation",
    "api_keys.list_keys": "listApiKeys",
    "api_keys.create_key": "createApiKey",
    "api_keys.revoke_key": "revokeApiKey",
    "sessions.messages": "listMessages",
    "session_stream.audit": "listEvents",
    "session_stream.pending": "listPendingConfirmations",
    "session_stream.stream": "streamSession",
    "session_stream.confirm": "answerConfirmation",
    "session_stream.get_request": "getConfirmation",
    "chat.confirm": "confirmAction",
    "chat.stop": "stopRun",
    "chat.working_memory": "getWorkingMemory",
    "tools.execute": "executeTool",
    "tools.schema": "getToolSchema",
    "uploads.upload": "uploadAttachment",
    "usage.session_usage": "getSessionUsage",
    "usage.usage": "getUsage",
    "budgets.alerts": "listBudgetAlerts",
    "artifacts.artifact": "getArtifact",
    "artifacts.download": "downloadArtifact",
    "artifacts.preview": "previewArtifact",
    "artifacts.versions": "listArtifactVersions",
    "deck_pages.regenerate": "regenerateSlide",
    "deck_pages.thumbnail": "getSlideThumbnail",
    "workspace_files.download": "downloadFile",
    "workspace_files.upload": "uploadFile",
    "memories.read": "getMemory",
    "memories.update": "updateMemory",
    "memories.forget": "forgetMemory",
    "memories.remember": "createMemory",
    "memories.search": "searchMemories",
    "episodic_search.search": "searchHistory",
}


def operation_id(
    handler: HTTPRouteHandler, _: Method, __: list[str | PathParameterDefinition]
) -> str:
    """The handler's operation id (Litestar's `OpenAPIConfig.operation_id_creator`)."""
    fn = unwrap_partial(handler.fn)
    module = fn.__module__.rsplit(".", 1)[-1]
    return OVERRIDES.get(f"{module}.{fn.__name__}") or camel_case(fn.__name__)


def camel_case(name: str) -> str:
    first, *rest = name.strip("_").split("_")
    return first + "".join(word.capitalize() for word in rest)
