//! Snapshot tests of the web agent panes.
