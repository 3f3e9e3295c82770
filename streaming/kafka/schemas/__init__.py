"""Wire formats of Kafka requests kafka-python does not define, in the JSON form its protocol
classes are generated from (Kafka's own message definitions describe the same fields)."""
