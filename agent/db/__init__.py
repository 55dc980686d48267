"""Postgres storage: server resolution, engine and migrations, and one repository per table group."""
