"""Tests of the server part (see tests/__init__.py)."""
