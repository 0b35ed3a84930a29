"""Writes of the scoring app: plain ``<entity>_<action>`` functions, one transaction each."""
