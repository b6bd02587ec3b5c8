"""Tests of the deploy part (see tests/__init__.py)."""
