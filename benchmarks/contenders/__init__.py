"""One module per contender of the durable-run benchmark, each driving the workload of
`benchmarks.workload` with its own agent, stub model, tool and store (see `benchmarks.driver`)."""
