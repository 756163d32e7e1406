"""Tools and agents from elsewhere: tools an MCP server offers, agents reached over A2A.

It holds 2,018 lines (`wc -l` of its modules).
"""
