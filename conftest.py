"""The repository's pytest hooks, for the tests and the notebooks alike (tests/conftest.py holds
the tests' fixtures): nbval's failures read stored -> fresh and name the command that stores the
page again (tests/support/stored_pages.py)."""

pytest_plugins = ["tests.support.stored_pages"]
