"""The parts the composition root builds from the settings: the model, the tools and
the sandbox they run code in, the blob store, the skills and the embedder they match
with, the engine's limits and the price table. Each `build_*` picks the adapter the
settings name."""

from __future__ import annotations

import functools
import logging
from pathlib import Path

from adapters.blobs.filesystem import FilesystemBlobStore
from adapters.config.price_file import PriceFileError, load_prices
from adapters.config.settings import Settings
from adapters.documents import PdfRenderer
from adapters.embeddings import EmbedderUnavailable, build_embedder, embedder_for
from adapters.llm.router import Factory, ModelRouter
from adapters.llm.scripted import load_llm_spec, script_path
from adapters.llm.tokens import TiktokenCounter
from adapters.llm.unconfigured import PROVIDER_KEYS, WAYS_TO_A_MODEL
from adapters.slides.renderer import PptxRenderer
from adapters.web.page_reader import HttpPageReader
from adapters.web.url_guard import AllowList
from adapters.web_search import build_web_search
from application.decks import DeckEditor
from application.engine_settings import EngineSettings
from application.memories import Memories
from application.memory_access import MemoryAccess
from application.ports import (
    LLM,
    BlobStore,
    Embedder,
    LLMNotConfigured,
    Sandbox,
    SandboxLimits,
)
from application.skills import SkillMatcher, SkillRegistry, builtin_skills_dir
from application.skills.service import Skills
from application.tools.activate_skill import ActivateSkill
from application.tools.base import AnyTool
from application.tools.code_execute import CodeExecute
from application.tools.create_doc import CreateDoc
from application.tools.files import file_tools
from application.tools.memory import memory_tools
from application.tools.notes import NoteProgress, RecordFinding, UpdatePlan
from application.tools.read_source import ReadSource
from application.tools.read_url import ReadUrl
from application.tools.skill_files import ReadSkillFile
from application.tools.skill_script import RunSkillScript
from application.tools.slides import deck_tools
from application.tools.web_search import WebSearchTool
from application.workspace_files import WorkspaceFiles
from domain.model_names import Provider, parse_model_name
from domain.pricing import PriceTable
from projections.memory_vectors import EmbeddingModels
from sandbox.bubblewrap import BubblewrapSandbox

log = logging.getLogger(__name__)


def build_llm(settings: Settings) -> LLM:
    """The model the settings name: scripted, or the router over the providers (each
    built when a call first names one of its models). Says nothing: the processes that
    call a model say which at start (`announce_model`), the commands that call none
    stay quiet."""
    if settings.llm:
        return load_llm_spec(settings.llm, counter=TiktokenCounter())
    return ModelRouter(model_factories(settings), default_model=settings.model)


def announce_model(settings: Settings) -> None:
    """One log line at the start of a process that calls a model: which it uses, and
    how to set a real one (a warning when it has none, or a scripted one)."""
    level, text = model_notice(settings)
    log.log(level, "%s", text)


def model_notice(settings: Settings) -> tuple[int, str]:
    """The level and text of `announce_model`'s line."""
    if settings.llm:
        return logging.WARNING, (
            f"model: the scripted model {settings.llm} ({script_path(settings.llm)}): it "
            f"plays its script whatever is asked; for a real model unset TOKENDANCE_LLM and "
            f"{PROVIDER_KEYS}"
        )
    provider = parse_model_name(settings.model).provider
    try:
        model_factories(settings)[provider]()  # as the first call builds it
    except LLMNotConfigured as e:
        return logging.WARNING, (
            f"model: none: TOKENDANCE_MODEL={settings.model} needs an API key for {provider} "
            f"({e}), "
            f"so every chat ends with LLM_NOT_CONFIGURED. To get a model, {WAYS_TO_A_MODEL}"
        )
    return logging.INFO, (
        f"model: {settings.model} ({provider}; set TOKENDANCE_MODEL for another, a session, "
        "workspace or skill may name its own)"
    )


def model_factories(settings: Settings) -> dict[Provider, Factory]:
    """How each provider's adapter is built; the SDKs take seconds to import, so only
    when a call first needs one."""

    bare = parse_model_name(settings.model).model  # an adapter's own default, unprefixed

    def anthropic() -> LLM:
        from adapters.llm.anthropic import AnthropicLLM

        return AnthropicLLM.from_env(model=bare, max_tokens=settings.max_tokens)

    def openai() -> LLM:
        from adapters.llm.openai import OpenAILLM

        return OpenAILLM.from_env(
            model=bare, max_tokens=settings.max_tokens, api=settings.openai_api
        )

    def gemini() -> LLM:
        from adapters.llm.gemini import GeminiLLM

        return GeminiLLM.from_env(model=bare, max_tokens=settings.max_tokens)

    return {"anthropic": anthropic, "openai": openai, "gemini": gemini}


def build_tools(
    settings: Settings,
    *,
    files: WorkspaceFiles | None = None,
    memories: Memories | None = None,
    memory_access: MemoryAccess | None = None,
) -> list[AnyTool]:
    """The built-in tools, their ports injected (a tool that needs a client gets it here).

    Without `files` the file tools are there but answer that files are not configured;
    likewise the memory tools without `memories`."""
    search = build_web_search(settings.tavily_api_key, settings.tavily_url)
    reader = HttpPageReader(AllowList.parse(settings.fetch_allow))
    skills = build_skills(settings)
    sandbox, limits = build_sandbox(settings), sandbox_limits(settings)
    code = CodeExecute(
        sandbox, limits=limits, max_wall_seconds=settings.sandbox_max_timeout, files=files,
        allow_domains=settings.sandbox_allow_domains,
    )  # fmt: skip
    return [
        UpdatePlan(), RecordFinding(), NoteProgress(), WebSearchTool(search), ReadUrl(reader),
        ReadSource(),
        ActivateSkill(skills), ReadSkillFile(skills), CreateDoc(PdfRenderer()),
        *file_tools(files), code, RunSkillScript(sandbox, skills, limits=limits),
        *deck_tools(DeckEditor(PptxRenderer())),
        *memory_tools(memories, memory_access, memories.bridge if memories else None),
    ]  # fmt: skip


def build_sandbox(settings: Settings) -> Sandbox:
    """Where code runs: bubblewrap on this machine (work directories in the data
    directory), or a Docker-API engine running the sandbox image."""
    if settings.sandbox == "docker":
        try:  # the docker SDK: only when asked for
            from sandbox.docker import DockerSandbox
        except ImportError as e:
            raise SystemExit(
                f"TOKENDANCE_SANDBOX=docker needs the docker SDK ({e}): "
                "install tokendance[docker] for the Docker sandbox"
            ) from None
        return DockerSandbox(image=settings.sandbox_image)
    return BubblewrapSandbox(settings.data_dir / "sandbox")


def sandbox_limits(settings: Settings) -> SandboxLimits:
    seconds = settings.sandbox_timeout
    return SandboxLimits(
        wall_seconds=float(seconds), cpu_seconds=seconds,
        memory_bytes=settings.sandbox_memory_mb * 2**20, processes=settings.sandbox_processes,
    )  # fmt: skip


def build_blobs(settings: Settings) -> BlobStore:
    """The S3 store `TOKENDANCE_S3_URL` names, else the data directory's `blobs/`."""
    if settings.s3_url is None:
        return FilesystemBlobStore(settings.data_dir / "blobs")
    try:  # minio: only when asked for
        from adapters.blobs.s3 import S3BlobStore, S3ConfigError
    except ImportError as e:
        raise SystemExit(
            f"TOKENDANCE_S3_URL is set but the S3 client is missing ({e}): "
            "install tokendance[s3] for S3 blobs"
        ) from None

    try:
        return S3BlobStore.connect(
            settings.s3_url, settings.s3_bucket, settings.s3_access_key or "",
            settings.s3_secret_key or "",
        )  # fmt: skip
    except S3ConfigError as e:
        raise SystemExit(f"TOKENDANCE_S3_URL: {e}") from None


def build_skills(settings: Settings) -> Skills:
    """The built-in skills and `TOKENDANCE_SKILLS_DIR`'s, with their matcher (one per
    process and configuration: the embedding model loads once)."""
    return _skills(settings.skills_dir, settings.embedder, settings.skill_match_threshold)


@functools.cache
def _skills(skills_dir: Path | None, embedder: str, threshold: float) -> Skills:
    registry = SkillRegistry.discover(builtin_skills_dir(), skills_dir)
    return Skills(registry, SkillMatcher(registry, loaded_embedder(embedder), threshold=threshold))


def build_engine_settings(settings: Settings) -> EngineSettings:
    return EngineSettings(
        model=settings.model,
        model_fallback=settings.model_fallback,
        max_tokens=settings.max_tokens,
        thinking_budget=settings.thinking_budget,
        context_window=settings.context_window,
        max_iterations=settings.max_iterations,
        cache_ttl=settings.cache_ttl,
    )


def load_price_table(settings: Settings) -> PriceTable:
    """The price table `TOKENDANCE_PRICES` names (default: the bundled one); a file that
    does not load stops the start with where it is wrong."""
    try:
        return load_prices(settings.prices)
    except PriceFileError as e:
        raise SystemExit(f"TOKENDANCE_PRICES: {e}") from None


def embedding_models(settings: Settings) -> EmbeddingModels:
    """The embedding models of memories and episodes: the configured one for new ones."""
    return EmbeddingModels(loaded_embedder(settings.embedder), embedder_for)


@functools.cache
def loaded_embedder(name: str) -> Embedder:
    """The embedder `name`, shared by memories, episodes and the skills' matcher (one per
    process: a model loads once); the hashing one, with a warning, if it cannot load."""
    try:
        return build_embedder(name)
    except EmbedderUnavailable as e:
        log.warning(
            "embedder %s unavailable (%s): memories, episodes and skills use the hashing "
            "embedder (skills are matched by keywords and hashed text only)", name, e,
        )  # fmt: skip
        return build_embedder("hashing")
