"""What to optimise: spec arguments made into validated KernelSpecs, and the reference program itself.

`loading.resolve_spec` turns a shipped name, a spec file or a `SOURCE:ARGUMENT` string (a plug-in of
`sources`, such as the bench's `kernelbench:1/19`) into a KernelSpec; the other modules load, shape,
trace and run the reference on which every candidate is judged.
"""
