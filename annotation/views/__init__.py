"""Pages of the annotation workspace (see ``annotation/urls.py`` for the map)."""
