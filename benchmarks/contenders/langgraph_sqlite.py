"""LangGraph with its SqliteSaver: the workload as the usual two-node graph (a model node,
a ToolNode running the tool) over a messages state, with `durability="sync"` (each step's
checkpoint is written before the next step starts: the guarantee our journal gives).
Runs in an environment of its own (`benchmarks.anchors`)."""

from __future__ import annotations

import sqlite3

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from benchmarks.workload import Workload, sqlite_bytes


def build(work: Workload, saver: SqliteSaver):
    @tool
    def leer(n: int) -> str:
        """Devuelve 1 KB."""
        return work.result(n)

    def model(state: MessagesState) -> dict:
        done = sum(isinstance(m, ToolMessage) for m in state["messages"])
        text, argument = work.answer(done)
        calls = (
            []
            if argument is None
            else [{"name": "leer", "args": {"n": argument}, "id": f"call-{argument}"}]
        )
        return {"messages": [AIMessage(content=text, tool_calls=calls)]}

    graph = StateGraph(MessagesState)
    graph.add_node("model", model)
    graph.add_node("tools", ToolNode([leer]))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition)
    graph.add_edge("tools", "model")
    return graph.compile(checkpointer=saver)


async def open(store: str) -> SqliteSaver:
    saver = SqliteSaver(sqlite3.connect(store, check_same_thread=False))
    saver.setup()
    saver.get_tuple({"configurable": {"thread_id": "warm-up"}})
    return saver


async def drive(saver: SqliteSaver, work: Workload) -> int:
    """Start the thread `r`, or continue it from its last checkpoint (input `None`): on a
    finished thread that returns its state and runs nothing."""
    graph = build(work, saver)
    config = {"configurable": {"thread_id": "r"}, "recursion_limit": 2 * work.n + 10}
    started = saver.get_tuple(config) is not None
    task = None if started else {"messages": [HumanMessage("go")]}
    steps = 0
    for _ in graph.stream(task, config, durability="sync", stream_mode="updates"):
        steps += 1
    return max(steps, 1)  # a finished thread streams no update; it returns its state


async def close(saver: SqliteSaver) -> None:
    saver.conn.close()


stored_bytes = sqlite_bytes
