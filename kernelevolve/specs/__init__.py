"""What to optimise: spec arguments made into validated KernelSpecs, and the reference program itself.

`loading.resolve_spec` turns a spec argument into a KernelSpec; the other modules load, shape, trace
and run the reference on which every candidate is judged.
"""
