"""Tests of the engine part (see tests/__init__.py)."""
