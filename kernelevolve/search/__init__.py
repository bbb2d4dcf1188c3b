"""The search: the engine's loop, the search graph, fitness, stop rules and selection policies.

Nothing here imports torch; the engine reaches the harness only through the `Evaluator` it is given.
"""
