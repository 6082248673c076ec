package main

import (
	_ "github.com/confluentinc/confluent-kafka-go/v2/schemaregistry"
	_ "github.com/confluentinc/confluent-kafka-go/v2/schemaregistry/rules/cel"
	_ "github.com/confluentinc/confluent-kafka-go/v2/schemaregistry/serde/avrov2"
)

func main() {}
