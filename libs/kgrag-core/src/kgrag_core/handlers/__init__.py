"""Handlers: take a batch of events and small ports, return the events they produce.

A handler never imports a bus, a database driver or an index client, so the same handler runs on the
in-process bus and on Kafka.
"""
