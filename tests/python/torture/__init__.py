"""Processes for the crash-torture (test_torture.py) and concurrency-soak (test_soak.py) tests:
writers and readers run as their own Python processes on one store file, started with
`python -m torture.NAME` from tests/python."""
