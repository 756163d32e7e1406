"""Tools and agents from elsewhere: tools an MCP server offers, agents reached over A2A.

It holds 1,507 lines (`wc -l` of its modules).
"""
