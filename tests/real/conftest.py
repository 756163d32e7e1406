"""The real-model tests. Whether the real model ran, and on which build, or why it did not, is
said in pytest's summary by tests/conftest.py: the summary is written by the process that runs
the session (with xdist, the controller), which loads that conftest and not this one."""
