"""The bound the suite puts on a wait that should end by itself.

A test waits on an event (a line printed, a file written, a socket open, a process ended),
never on a clock. `HANG` only ends a hang: it is far longer than anything here takes on a
machine busy with other work (the suite and the notebooks' check are run beside eight CPU hogs
with `scripts.carga`: load 8 to 40 on 2 cores), so reaching it means something hangs, never
that the machine was slow.
"""

HANG = 600.0  # seconds
