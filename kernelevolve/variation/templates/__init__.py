"""Template kernels shipped as package data, one sub-folder per backend (read by template_library)."""
