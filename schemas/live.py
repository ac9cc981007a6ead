"""What goes over the live NATS subject of a session (`<stream>.live.<session>`): the
items a process publishes for the API processes to pass on to SSE, never stored."""

from __future__ import annotations

import msgspec


class LiveMessage(msgspec.Struct, tag_field="type", frozen=True):
    """Base of the live messages; the tag says which."""


class TextChunk(LiveMessage, tag="text_delta", frozen=True):
    text: str


class ThinkingBegan(LiveMessage, tag="thinking_start", frozen=True):
    pass


class ThinkingChunk(LiveMessage, tag="thinking_delta", frozen=True):
    text: str


class ToolStarted(LiveMessage, tag="tool_running", frozen=True):
    tool_use_id: str
    name: str


class ToolProgressed(LiveMessage, tag="tool_progress", frozen=True):
    tool_use_id: str
    message: str


Live = TextChunk | ThinkingBegan | ThinkingChunk | ToolStarted | ToolProgressed
_decoder: msgspec.json.Decoder[Live] = msgspec.json.Decoder(Live)
_encoder = msgspec.json.Encoder()


def encode(message: Live) -> bytes:
    return _encoder.encode(message)


def decode(data: bytes) -> Live:
    return _decoder.decode(data)
