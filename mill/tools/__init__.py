"""Offline developer tools (model conversion and similar one-off utilities)."""
