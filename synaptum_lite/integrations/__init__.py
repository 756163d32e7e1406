"""Tools and agents from elsewhere, and traces for elsewhere: tools an MCP server offers,
agents reached over A2A, OpenTelemetry spans of a run (live, or from its journal).

It holds 2,938 lines (`wc -l` of its modules).
"""
