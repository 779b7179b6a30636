"""Checks of the model string that need no litellm: reported before anything is imported.

litellm takes seconds to import; a misspelt provider or a missing API key should not make
a person wait for it to hear about their typo. What can be decided from the string and the
environment alone is decided here, conservatively: this module only reports what litellm's
own check (llm/client.py `check_model`, which still runs before the first call) would also
reject, and passes everything else on. `tests/llm/test_preflight.py` holds both to the same
verdicts, and holds the snapshots below to litellm 1.105.0 (the pinned version).
"""
from __future__ import annotations

from collections.abc import Mapping

# The first path segment of every model string litellm 1.105.0 resolves: its provider list
# plus the prefixes of the slash-named models in its price map (e.g. `anyscale/...`).
# A model `X/...` whose X is not here is rejected by litellm's get_llm_provider.
KNOWN_PREFIXES = frozenset("""
    1024-x-1024 1024-x-1536 1536-x-1024 512-x-512 a2a a2a_agent agentcore ai21 ai21_chat
    aihubmix aiml aiohttp_openai amazon-nova amazon_nova anthropic anthropic_text anyscale
    apertis apiserpent assemblyai auto_router aws_polly aws_textract azure azure_ai
    azure_speech azure_text baseten bedrock bedrock_mantle bing_grounding black_forest_labs
    bytez cerebras charity_engine chatgpt chutes clarifai cloudflare codestral cognition
    cohere cohere_chat cometapi compactifai cortecs crusoe cursor custom custom_openai
    darkbloom dashscope databricks dataforseo datarobot deepgram deepinfra deepseek
    docker_model_runner dotprompt duckduckgo edenai elevenlabs empower exa_ai fal_ai
    featherless_ai firecrawl fireworks_ai friendliai galadriel gdc gemini gigachat github
    github_copilot gmi google_pse gradient_ai groq helicone heroku high hosted_vllm
    huggingface humanloop hyperbolic inception infinity jina_ai lambda_ai langflow langfuse
    langgraph lemonade libertai linkup litellm_agent litellm_proxy llamafile llamagate
    lm_studio low manus maritalk max-x-max medium meta meta_llama milvus minimax mistral
    modelscope mongodb moonshot morph nadir nano-gpt nebius neosantara nimble nlp_cloud
    novita nscale nvidia_nim nvidia_riva oci ollama ollama_chat oobabooga openai openai_like
    openrouter ovhcloud palm parallel_ai parasail perplexity petals pg_vector pinstripes poe
    predibase prism publicai qwen_ai_platform qwencloud ragflow recraft reducto replicate
    runwayml s3_vectors sagemaker sagemaker_chat sagemaker_nova sail sambanova sap sarvam
    scaleway scx-ai searxng serper snowflake soniox stability standard strands_decider
    synthetic tavily tencent tensormesh text-completion-codestral text-completion-inception
    text-completion-openai tinyfish together_ai topaz transcribe triton typesafe v0 valkey
    vercel_ai_gateway vertex_ai vertex_ai_beta vllm volcengine voyage wandb watsonx
    watsonx_text xai xiaomi_mimo xinference you_com zai
""".split())

# Providers whose key litellm's validate_environment requires: any one of the variables.
PROVIDER_KEYS: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "groq": ("GROQ_API_KEY",),
    "mistral": ("MISTRAL_API_KEY",),
    "deepseek": ("DEEPSEEK_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY",),
    "xai": ("XAI_API_KEY",),
    "cohere": ("COHERE_API_KEY",),
    "fireworks_ai": ("FIREWORKS_AI_API_KEY",),
    "cerebras": ("CEREBRAS_API_KEY",),
}


def preflight(model: str, api_key: str | None, env: Mapping[str, str]) -> str | None:
    """The one-line problem with this model string in this environment, or None when it
    looks runnable (or only litellm can tell)."""
    if "/" not in model:
        return None  # a bare name (gpt-4.1): litellm's price map decides its provider
    provider = model.split("/", 1)[0]
    if provider not in KNOWN_PREFIXES:
        return (f"unknown model or provider: {model!r} (use a litellm model string such as "
                "openai/gpt-4.1 or anthropic/claude-sonnet-4-5)")
    keys = PROVIDER_KEYS.get(provider)
    if keys is None or api_key or any(env.get(name) for name in keys):
        return None
    return f"missing API key for {provider}: set {' or '.join(keys)} (or api_key in config)"
