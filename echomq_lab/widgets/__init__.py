"""ipywidgets panels for the lab. Each panel owns its widgets and calls the library."""
