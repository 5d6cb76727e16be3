"""tilelang-lsp: a language server for TileLang kernels (see server.py for the protocol side).

Importing this package imports neither pygls nor the tilelang compiler.
"""

__version__ = "0.1.0"
