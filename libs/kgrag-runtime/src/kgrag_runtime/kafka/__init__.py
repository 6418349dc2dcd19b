"""The distributed event backbone on Apache Kafka (confluent-kafka): producer, consumer runner, topics."""
