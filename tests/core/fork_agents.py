"""What the fork tests drive: the cashier of `agents.py` run to its end, and a boss that
delegates a payment to a treasurer (a sub-run with a non-idempotent tool), in a store.

Effects are counted by the tools in `PAGOS`, with the idempotency key each call carried.
"""

from __future__ import annotations

from synaptum_lite import Agent, Checkpointer, Role, Session, ToolContext, tool
from synaptum_lite.testing import ScriptedGateway, calls, says

from .agents import TASK, cajero, double

PAGOS: list[str] = []  # one line per payment made: its idempotency key


@tool()
def pagar(importe: float, contexto: ToolContext) -> str:
    """Paga un importe."""
    PAGOS.append(contexto.idempotency_key)
    return f"pagados {importe:.2f} €"


def responder_jefe(request):  # the treasurer pays; the boss delegates, then answers
    if any(spec.name == "pagar" for spec in request.tools):
        paid = any(m.role is Role.TOOL for m in request.messages)
        return says("pagado") if paid else calls("pagar", importe=10.0)
    done = sum(1 for m in request.messages if m.role is Role.TOOL)
    return calls("tesorero", task="paga 10") if done == 0 else says("el tesorero pagó")


tesorero = Agent(
    "tesorero", model="m", instructions="Paga.", tools=[pagar], description="Paga facturas."
)
jefe = Agent("jefe", model="m", instructions="Delega.", delegates=[tesorero])


def gateway_jefe() -> ScriptedGateway:
    return ScriptedGateway([responder_jefe] * 10, tools=[pagar])


async def drive(store: Checkpointer, run_id: str, gateway: ScriptedGateway | None = None) -> list:
    """Drive the cashier's run `run_id` to its end; the steps it yielded."""
    session = Session(run_id, gateway or double(), store)
    return [step async for step in cajero().run(TASK, session=session)]


async def drive_jefe(store: Checkpointer, run_id: str, gateway: ScriptedGateway) -> list:
    session = Session(run_id, gateway, store)
    return [step async for step in jefe.run("paga 10", session=session)]
