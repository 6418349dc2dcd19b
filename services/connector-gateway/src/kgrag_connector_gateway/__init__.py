"""connector-gateway: authenticated change events from source systems onto Kafka."""
