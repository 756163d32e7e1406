"""Tools and agents from elsewhere: tools an MCP server offers, agents reached over A2A."""
