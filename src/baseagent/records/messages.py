"""Reading chat messages (OpenAI format) as plain text, for people and for exports."""
from __future__ import annotations

from typing import Any


def content_text(content: Any) -> str:
    """The text of a message's content, whether a string or a list of parts (an image part
    reads as "[image]")."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, dict) and part.get("type") == "text":
                texts.append(str(part.get("text", "")))
            elif isinstance(part, dict) and part.get("type") == "image_url":
                texts.append("[image]")
        return "\n".join(texts)
    return ""
