package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"

	"github.com/confluentinc/confluent-kafka-go/v2/schemaregistry"
	"github.com/confluentinc/confluent-kafka-go/v2/schemaregistry/serde"
	"github.com/confluentinc/confluent-kafka-go/v2/schemaregistry/serde/jsonschema"
)

// jsonScenario is the JSON Schema plan (mode "json"), as Confluent's JS program runs it:
// serde/jsonschema's Serializer writes `plan.json_value` under `<prefix>-json-value` (the
// schema registered first, used as latest, the value validated), its Deserializer reads
// those bytes back, then every other writer's bytes in `plan.read`. With `"write": false`
// the plan only reads.
func (p *program) jsonScenario() {
	topic := p.plan.Prefix + "-json"
	if p.plan.writes() {
		p.step("json_write", func() (any, error) {
			info := schemaregistry.SchemaInfo{Schema: p.plan.JSONSchema, SchemaType: "JSON"}
			if _, err := p.client().Register(topic+"-value", info, false); err != nil {
				return nil, err
			}
			data, err := p.serializeJSON(topic)
			if err != nil {
				return nil, err
			}
			decoded, err := p.deserializeJSON(topic, data)
			return map[string]any{"hex": hex.EncodeToString(data), "decoded": decoded}, err
		})
	}
	for _, item := range p.plan.Read {
		p.step("json_read_"+item.Writer, func() (any, error) {
			data, err := hex.DecodeString(item.Hex)
			if err != nil {
				return nil, err
			}
			return p.deserializeJSON(item.Topic, data)
		})
	}
}

func (p *program) serializeJSON(topic string) ([]byte, error) {
	// json.Number keeps every integer of the plan exact through the serializer's
	// json.Marshal (a float64 would round past 2^53).
	decoder := json.NewDecoder(bytes.NewReader(p.plan.JSONValue))
	decoder.UseNumber()
	var value any
	if err := decoder.Decode(&value); err != nil {
		return nil, err
	}
	conf := jsonschema.NewSerializerConfig()
	conf.AutoRegisterSchemas = false
	conf.UseLatestVersion = true
	conf.EnableValidation = true
	ser, err := jsonschema.NewSerializer(p.client(), serde.ValueSerde, conf)
	if err != nil {
		return nil, err
	}
	return ser.Serialize(topic, &value)
}

// deserializeJSON decodes with a deserializer on a client of its own. Unlike the JS
// program's, it does not validate: confluent-kafka-go v2.11.1 validates the target it
// unmarshalled into, always a pointer (json.Unmarshal needs one), which
// santhosh-tekuri/jsonschema refuses, so with EnableValidation every read here failed
// ("jsonschema: invalid jsonType: *interface {}"). Its serializer does validate.
func (p *program) deserializeJSON(topic string, data []byte) (any, error) {
	des, err := jsonschema.NewDeserializer(p.client(), serde.ValueSerde, jsonschema.NewDeserializerConfig())
	if err != nil {
		return nil, err
	}
	// Its MessageFactory is unset for JSON Schema: Deserialize would call nil.
	var out any
	if err := des.DeserializeInto(topic, data, &out); err != nil {
		return nil, err
	}
	return out, nil
}
