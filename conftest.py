"""The repository's pytest hooks, for the tests and the notebooks alike (tests/conftest.py holds
the tests' fixtures): nbval's failures read stored -> fresh and name the command that stores the
page again (tests/support/stored_pages.py)."""

import pytest

# The helpers assert; let pytest explain their failures as it does for tests (registered before
# the plugin below imports tests.support).
pytest.register_assert_rewrite("tests.support")

pytest_plugins = ["tests.support.stored_pages"]
