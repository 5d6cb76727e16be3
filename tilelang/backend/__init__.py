"""Backends: target parsing and one package per target kind (c, cuda, hip, metal)."""
