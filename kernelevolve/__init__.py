"""kernelevolve: evolutionary search for fast, verified GPU kernels."""

__version__ = "0.1.0"
