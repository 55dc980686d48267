"""Quire package."""
