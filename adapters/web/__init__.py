"""Reading the web for the agent: a URL guard and the `PageReader` over httpx."""
