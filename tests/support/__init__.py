"""Helpers shared by the test suites: event generators, a worker-process harness, Kafka readers."""
