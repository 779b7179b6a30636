"""OpenAPI 3 documents as tool sources (docs/TOOLS.md): each selected operation is one
tool, called with httpx (AgentB's OpenAPIConnector, for baseagent)."""
