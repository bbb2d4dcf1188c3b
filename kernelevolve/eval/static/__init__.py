"""Static checks of a candidate's source, before any of it runs: `checks.check_source` (its docstring maps
the sibling modules)."""
