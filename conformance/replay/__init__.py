"""Replaying one drawn schedule alone: ``kconform replay-schedule`` (``command``)."""
