"""Helpers the tests share (test-only code, not part of the package): ``browser``, a headless
Chromium driver for the evaluate report's pages."""
