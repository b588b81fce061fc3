"""The MCP server: ValueRank's tools and resources for AI assistants (Claude Code and others).

`valuerank mcp` serves it over stdio (`valuerank.mcp.stdio`), `valuerank serve` over the
streamable HTTP transport at `/mcp` (`valuerank.mcp.http`). Every tool is a view of one JSON
API route (`valuerank.mcp.spec`, the tool families in `tools_*.py`), called as the caller
(`valuerank.mcp.gateway`), so scoping, roles, limits, errors and shapes are the API's.
"""
