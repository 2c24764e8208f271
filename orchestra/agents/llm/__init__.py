"""Provider clients for buzz-agent: OpenAI chat/Responses and Anthropic Messages over httpx."""
