"""Resume after a kill, alone: the time from opening the store to the first new call, ours
against LangGraph's SqliteSaver, side by side in one sitting.

The same operation as the resume of `benchmarks.durable_runs` (a child killed with SIGKILL
inside the model call of turn N/2 + 1, then a child that resumes: the clock runs from before
it opens the store to its first call), without the rest of the page, so that working on the
resume path can be measured in a minute. The contenders alternate; figures are medians.

    uv run --group bench python -m benchmarks.resume [--sizes 200 400] [--repeats 5] [--only lite]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from benchmarks import anchors
from benchmarks.durable_runs import Stores, call, kill_at_half


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[200, 400])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--only", nargs="+", help="contender keys (lite, langgraph, synaptum)")
    options = parser.parse_args()
    found, skipped = anchors.contenders(None)
    wanted = options.only or ["lite", "langgraph"]
    contenders = [c for c in found if c.key in wanted]
    for message in skipped:
        print(message)
    times: dict[tuple[str, int], list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="synaptum-resume-") as scratch:
        stores = Stores(Path(scratch), None)
        for repeat in range(options.repeats):
            for n in options.sizes:
                shift = repeat % len(contenders)
                for contender in contenders[shift:] + contenders[:shift]:
                    with stores.fresh(contender) as store:
                        kill_at_half(contender, n, store)
                        resumed = call(contender, "resume", n, store)
                    times.setdefault((contender.key, n), []).append(resumed["first_call_s"] * 1000)
    print(f"first call after a kill at N/2, ms (medians of {options.repeats}; min-max)")
    for n in options.sizes:
        line = [f"N={n:<4}"]
        for contender in contenders:
            taken = times[(contender.key, n)]
            spread = f"({min(taken):.1f}-{max(taken):.1f})"
            line.append(f"{contender.key} {statistics.median(taken):7.2f} {spread}")
        if len(contenders) == 2:
            mine, theirs = (statistics.median(times[(c.key, n)]) for c in contenders)
            line.append(f"ratio {theirs / mine:.2f}x")
        print("  ".join(line))


if __name__ == "__main__":
    main()
