// Command go-client runs confluent-kafka-go's schemaregistry client and its avrov2,
// jsonschema and protobuf serdes against a registry: the interop program for Go.
//
//	go-client < plan.json > report.json
//
// The plan and the report are those of every interop program (tests/interop/clients.py).
// A step that fails is reported and the next one runs; the program exits non-zero only
// when it cannot read its plan.
package main

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/confluentinc/confluent-kafka-go/v2/schemaregistry"
	"github.com/confluentinc/confluent-kafka-go/v2/schemaregistry/rest"
	"github.com/confluentinc/confluent-kafka-go/v2/schemaregistry/rules/cel"
	"github.com/confluentinc/confluent-kafka-go/v2/schemaregistry/serde"
	"github.com/confluentinc/confluent-kafka-go/v2/schemaregistry/serde/avrov2"
	"github.com/hamba/avro/v2"
)

type plan struct {
	URL      string                                `json:"url"`
	Prefix   string                                `json:"prefix"`
	Mode     string                                `json:"mode"`
	Schemas  map[string]string                     `json:"schemas"`
	Value    map[string]any                        `json:"value"`
	RuleSet  *schemaregistry.RuleSet               `json:"rule_set"`
	RuleGood map[string]any                        `json:"rule_good"`
	RuleBad  map[string]any                        `json:"rule_bad"`
	Read     []struct{ Writer, Topic, Hex string } `json:"read"`
	// Mode "json": the schema and the value its writer registers and writes.
	JSONSchema string          `json:"json_schema"`
	JSONValue  json.RawMessage `json:"json_value"`
	// Mode "protobuf": protoc's FileDescriptorSet (base64 in JSON, which encoding/json
	// decodes into []byte), the message's full name and its value in proto3 JSON.
	DescriptorSet []byte          `json:"descriptor_set"`
	MessageName   string          `json:"message_name"`
	ProtoValue    json.RawMessage `json:"proto_value"`
	// Modes "json" and "protobuf": false to only read `read` (bytes written after this
	// program's own write, by a program that read those).
	Write *bool `json:"write"`
}

func (p plan) writes() bool { return p.Write == nil || *p.Write }

type outcome map[string]any

type program struct {
	plan  plan
	steps map[string]outcome
}

// step runs fn and records its value, or the error it returned.
func (p *program) step(name string, fn func() (any, error)) {
	defer func() {
		// A library that panics fails this step, not the whole report.
		if r := recover(); r != nil {
			p.steps[name] = outcome{"ok": false, "error": fmt.Sprintf("panic: %v", r), "type": "panic"}
		}
	}()
	value, err := fn()
	if err == nil {
		p.steps[name] = outcome{"ok": true, "value": value}
		return
	}
	out := outcome{"ok": false, "error": err.Error(), "type": fmt.Sprintf("%T", err)}
	var restErr *rest.Error
	if errors.As(err, &restErr) {
		out["error_code"] = restErr.Code
	}
	p.steps[name] = out
}

func (p *program) okValue(name string) (any, error) {
	if out := p.steps[name]; out["ok"] == true {
		return out["value"], nil
	}
	return nil, fmt.Errorf("step %s failed first", name)
}

// client is a client of its own per use, so no cache hides what the server answers.
func (p *program) client() schemaregistry.Client {
	conf := schemaregistry.NewConfig(p.plan.URL)
	conf.MaxRetries = 0
	client, err := schemaregistry.NewClient(conf)
	if err != nil {
		panic(err) // only for a malformed URL, which is the plan's fault
	}
	return client
}

func avroInfo(schema string) schemaregistry.SchemaInfo {
	return schemaregistry.SchemaInfo{Schema: schema, SchemaType: "AVRO"}
}

func metadata(m schemaregistry.SchemaMetadata) map[string]any {
	return map[string]any{"id": m.ID, "version": m.Version, "subject": m.Subject, "schema": m.Schema}
}

func (p *program) api() {
	subject := p.plan.Prefix + "-api"
	v1 := avroInfo(p.plan.Schemas["v1"])
	client := p.client()
	p.step("register", func() (any, error) {
		m, err := client.RegisterFullResponse(subject, v1, false)
		return metadata(m), err
	})
	p.step("get_by_id", func() (any, error) {
		registered, err := p.okValue("register")
		if err != nil {
			return nil, err
		}
		info, err := p.client().GetBySubjectAndID(subject, registered.(map[string]any)["id"].(int))
		return info.Schema, err
	})
	p.step("get_version", func() (any, error) {
		m, err := p.client().GetSchemaMetadata(subject, 1)
		return metadata(m), err
	})
	p.step("get_latest", func() (any, error) {
		m, err := p.client().GetLatestSchemaMetadata(subject)
		return metadata(m), err
	})
	p.step("lookup", func() (any, error) {
		m, err := p.client().GetIDFullResponse(subject, v1, false)
		return metadata(m), err
	})
	p.step("compat_ok", func() (any, error) {
		return p.client().TestSubjectCompatibility(subject, avroInfo(p.plan.Schemas["v2"]))
	})
	p.step("compat_bad", func() (any, error) {
		return p.client().TestSubjectCompatibility(subject, avroInfo(p.plan.Schemas["incompatible"]))
	})
	p.step("register_v2", func() (any, error) {
		m, err := client.RegisterFullResponse(subject, avroInfo(p.plan.Schemas["v2"]), false)
		return metadata(m), err
	})
	p.step("versions", func() (any, error) { return client.GetAllVersions(subject) })
	p.step("config_set", func() (any, error) {
		c, err := client.UpdateCompatibility(subject, schemaregistry.Full)
		return c.String(), err
	})
	p.step("config_get", func() (any, error) {
		c, err := p.client().GetCompatibility(subject)
		return c.String(), err
	})
	p.step("soft_delete", func() (any, error) {
		deleted, err := client.DeleteSubjectVersion(subject, 2, false)
		if err != nil {
			return nil, err
		}
		versions, err := p.client().GetAllVersions(subject)
		return map[string]any{"deleted": deleted, "versions": versions}, err
	})
	p.step("hard_delete", func() (any, error) {
		purgedVersion, err := client.DeleteSubjectVersion(subject, 2, true)
		if err != nil {
			return nil, err
		}
		deleted, err := client.DeleteSubject(subject, false)
		if err != nil {
			return nil, err
		}
		purged, err := client.DeleteSubject(subject, true)
		if err != nil {
			return nil, err
		}
		subjects, err := p.client().GetAllSubjects()
		return map[string]any{"deleted_version": purgedVersion, "deleted_subject": deleted,
			"purged_subject": purged, "listed": slices.Contains(subjects, subject)}, err
	})
}

// native turns a JSON-decoded value into what hamba/avro encodes for `schema`
// (JSON numbers arrive as float64; a long must be an int64).
func native(schema avro.Schema, value any) any {
	switch s := schema.(type) {
	case *avro.RecordSchema:
		in, ok := value.(map[string]any)
		if !ok {
			return value
		}
		out := make(map[string]any, len(in))
		for _, field := range s.Fields() {
			if v, present := in[field.Name()]; present {
				out[field.Name()] = native(field.Type(), v)
			}
		}
		return out
	case *avro.ArraySchema:
		in, ok := value.([]any)
		if !ok {
			return value
		}
		out := make([]any, len(in))
		for i, v := range in {
			out[i] = native(s.Items(), v)
		}
		return out
	case *avro.PrimitiveSchema:
		if f, ok := value.(float64); ok {
			switch s.Type() {
			case avro.Long:
				return int64(f)
			case avro.Int:
				return int32(f)
			case avro.Float:
				return float32(f)
			}
		}
	}
	return value
}

// serialize writes `value` with the latest schema of `<topic>-value`, registering
// `schema` there first (with a map, the serializer cannot infer a schema of its own).
func (p *program) serialize(topic, schema string, value map[string]any) ([]byte, error) {
	if _, err := p.client().Register(topic+"-value", avroInfo(schema), false); err != nil {
		return nil, err
	}
	return p.serializeLatest(topic, schema, value)
}

func (p *program) serializeLatest(topic, schema string, value map[string]any) ([]byte, error) {
	parsed, err := avro.Parse(schema)
	if err != nil {
		return nil, err
	}
	conf := avrov2.NewSerializerConfig()
	conf.AutoRegisterSchemas = false
	conf.UseLatestVersion = true
	ser, err := avrov2.NewSerializer(p.client(), serde.ValueSerde, conf)
	if err != nil {
		return nil, err
	}
	// The serializer wants a pointer, whatever it points to.
	msg := native(parsed, value).(map[string]any)
	return ser.Serialize(topic, &msg)
}

func (p *program) deserialize(topic string, data []byte) (any, error) {
	client := p.client()
	des, err := avrov2.NewDeserializer(client, serde.ValueSerde, avrov2.NewDeserializerConfig())
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := des.DeserializeInto(topic, data, &out); err != nil {
		return nil, err
	}
	// The writer schema, from the cache the deserializer just filled (no request).
	info, err := client.GetBySubjectAndID(topic+"-value", int(binary.BigEndian.Uint32(data[1:5])))
	if err != nil {
		return nil, err
	}
	writer, err := avro.Parse(info.Schema)
	if err != nil {
		return nil, err
	}
	return plain(writer, out), nil
}

// plain turns hamba/avro's {"type": value} for a union member into the bare value, as
// the other clients print it (Avro's JSON encoding wraps, their objects do not).
func plain(schema avro.Schema, value any) any {
	switch s := schema.(type) {
	case *avro.RecordSchema:
		in, ok := value.(map[string]any)
		if !ok {
			return value
		}
		out := make(map[string]any, len(in))
		for _, field := range s.Fields() {
			out[field.Name()] = plain(field.Type(), in[field.Name()])
		}
		return out
	case *avro.ArraySchema:
		if in, ok := value.([]any); ok {
			out := make([]any, len(in))
			for i, v := range in {
				out[i] = plain(s.Items(), v)
			}
			return out
		}
	case *avro.UnionSchema:
		if in, ok := value.(map[string]any); ok && len(in) == 1 {
			for name, v := range in {
				for _, member := range s.Types() {
					if avroTypeName(member) == name {
						return plain(member, v)
					}
				}
			}
		}
	}
	return value
}

func avroTypeName(schema avro.Schema) string {
	if named, ok := schema.(avro.NamedSchema); ok {
		return named.FullName()
	}
	return string(schema.Type())
}

func (p *program) serdes() {
	prefix, v1, value := p.plan.Prefix, p.plan.Schemas["v1"], p.plan.Value
	topic := prefix + "-rt"
	p.step("roundtrip", func() (any, error) {
		data, err := p.serialize(topic, v1, value)
		if err != nil {
			return nil, err
		}
		decoded, err := p.deserialize(topic, data)
		return map[string]any{"hex": hex.EncodeToString(data), "decoded": decoded}, err
	})
	written := func() ([]byte, error) {
		rt, err := p.okValue("roundtrip")
		if err != nil {
			return nil, err
		}
		return hex.DecodeString(rt.(map[string]any)["hex"].(string))
	}
	// A consumer on a mirror of the topic: `<mirror>-value` does not exist.
	p.step("mirror_topic", func() (any, error) {
		data, err := written()
		if err != nil {
			return nil, err
		}
		return p.deserialize(prefix+"-mirror", data)
	})
	// ... and on a topic whose `-value` subject holds another schema, not the writer's.
	p.step("mirror_other_subject", func() (any, error) {
		data, err := written()
		if err != nil {
			return nil, err
		}
		if _, err := p.client().Register(prefix+"-other-value", avroInfo(p.plan.Schemas["other"]), false); err != nil {
			return nil, err
		}
		return p.deserialize(prefix+"-other", data)
	})
	// The writer's subject hard-deleted; the id lives on under another subject.
	p.step("deleted_subject", func() (any, error) {
		gone, client := prefix+"-gone", p.client()
		data, err := p.serialize(gone, v1, value)
		if err != nil {
			return nil, err
		}
		if _, err := client.Register(prefix+"-keep", avroInfo(v1), false); err != nil {
			return nil, err
		}
		if _, err := client.DeleteSubject(gone+"-value", false); err != nil {
			return nil, err
		}
		if _, err := client.DeleteSubject(gone+"-value", true); err != nil {
			return nil, err
		}
		return p.deserialize(gone, data)
	})
}

// payment is the rule step's record. confluent-kafka-go's CEL executor evaluates a struct
// (cel-go native types, by Go field name); on the *map[string]any the other steps use,
// it fails ("reflect: Key of non-map type").
type payment struct {
	ID     int64   `avro:"Id" json:"Id"`
	Amount float64 `avro:"Amount" json:"Amount"`
	Payee  string  `avro:"Payee" json:"Payee"`
}

func (p *program) serializePayment(topic string, value map[string]any) ([]byte, error) {
	text, err := json.Marshal(value)
	if err != nil {
		return nil, err
	}
	var msg payment
	if err := json.Unmarshal(text, &msg); err != nil {
		return nil, err
	}
	conf := avrov2.NewSerializerConfig()
	conf.AutoRegisterSchemas = false
	conf.UseLatestVersion = true
	ser, err := avrov2.NewSerializer(p.client(), serde.ValueSerde, conf)
	if err != nil {
		return nil, err
	}
	return ser.Serialize(topic, &msg)
}

func (p *program) rule() {
	topic := p.plan.Prefix + "-rule"
	schema := p.plan.Schemas["rule"]
	p.step("rule", func() (any, error) {
		info := avroInfo(schema)
		info.RuleSet = p.plan.RuleSet
		registered, err := p.client().RegisterFullResponse(topic+"-value", info, false)
		if err != nil {
			return nil, err
		}
		stored, err := p.client().GetLatestSchemaMetadata(topic + "-value")
		if err != nil {
			return nil, err
		}
		good, err := p.serializePayment(topic, p.plan.RuleGood)
		if err != nil {
			return nil, err
		}
		var badError any
		if _, err := p.serializePayment(topic, p.plan.RuleBad); err != nil {
			badError = err.Error()
		}
		decoded, err := p.deserialize(topic, good)
		return map[string]any{
			"id": registered.ID, "stored_rule_set": stored.RuleSet, "good_decoded": decoded,
			"good_id": binary.BigEndian.Uint32(good[1:5]), "bad_error": badError,
		}, err
	})
}

func (p *program) read() {
	for _, item := range p.plan.Read {
		p.step(item.Writer, func() (any, error) {
			data, err := hex.DecodeString(item.Hex)
			if err != nil {
				return nil, err
			}
			return p.deserialize(item.Topic, data)
		})
	}
}

func main() {
	cel.Register()
	p := &program{steps: map[string]outcome{}}
	if err := json.NewDecoder(os.Stdin).Decode(&p.plan); err != nil {
		fmt.Fprintf(os.Stderr, "go-client: cannot read the plan on stdin: %v\n", err)
		os.Exit(2)
	}
	switch p.plan.Mode {
	case "read":
		p.read()
	case "json":
		p.jsonScenario()
	case "protobuf":
		p.protobufScenario()
	default:
		p.api()
		p.serdes()
		p.rule()
	}
	if err := json.NewEncoder(os.Stdout).Encode(map[string]any{"steps": p.steps}); err != nil {
		fmt.Fprintf(os.Stderr, "go-client: cannot write the report: %v\n", err)
		os.Exit(2)
	}
}
