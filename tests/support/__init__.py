"""Helpers the tests share: paths, programs started as subprocesses, samples, fakes."""
