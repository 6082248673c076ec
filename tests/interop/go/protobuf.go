package main

import (
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/confluentinc/confluent-kafka-go/v2/schemaregistry/serde"
	"github.com/confluentinc/confluent-kafka-go/v2/schemaregistry/serde/protobuf"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// protoTypes are the plan's message types, built at run time from its protoc
// FileDescriptorSet as generated code would bring them: no generated Go code.
type protoTypes struct {
	message protoreflect.MessageType
	// Every message of the set, for the deserializer's factory (it looks the writer's
	// message up by full name) and for protojson (Any, should one appear).
	registry *protoregistry.Types
}

func newProtoTypes(descriptorSet []byte, messageName string) (*protoTypes, error) {
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(descriptorSet, &set); err != nil {
		return nil, fmt.Errorf("descriptor_set: %w", err)
	}
	files, err := protodesc.NewFiles(&set)
	if err != nil {
		return nil, fmt.Errorf("descriptor_set: %w", err)
	}
	types := new(protoregistry.Types)
	files.RangeFiles(func(file protoreflect.FileDescriptor) bool {
		err = registerMessages(types, file.Messages())
		return err == nil
	})
	if err != nil {
		return nil, err
	}
	message, err := types.FindMessageByName(protoreflect.FullName(messageName))
	if err != nil {
		return nil, fmt.Errorf("message_name %q: %w", messageName, err)
	}
	return &protoTypes{message: message, registry: types}, nil
}

func registerMessages(types *protoregistry.Types, messages protoreflect.MessageDescriptors) error {
	for i := range messages.Len() {
		md := messages.Get(i)
		if md.IsMapEntry() {
			continue
		}
		if err := types.RegisterMessage(dynamicpb.NewMessageType(md)); err != nil {
			return err
		}
		if err := registerMessages(types, md.Messages()); err != nil {
			return err
		}
	}
	return nil
}

// json is `msg` in proto3 JSON, as a value the report embeds.
func (t *protoTypes) json(msg proto.Message) (any, error) {
	text, err := protojson.MarshalOptions{Resolver: t.registry}.Marshal(msg)
	if err != nil {
		return nil, err
	}
	return json.RawMessage(text), nil
}

// protobufScenario is the Protobuf plan (mode "protobuf"), as Confluent's JS program runs
// it: serde/protobuf's Serializer registers the message's file (its imports as
// references) and writes `plan.proto_value` (proto3 JSON) under `<prefix>-proto`; its
// Deserializer, which learns the writer's schema from the registry (as text) and makes
// the message from `protoTypes.registry`, reads those bytes and every other writer's in
// `plan.read`, answering proto3 JSON. With `"write": false` the plan only reads.
func (p *program) protobufScenario() {
	topic := p.plan.Prefix + "-proto"
	// A descriptor set that does not build fails each step, saying why.
	built, buildErr := newProtoTypes(p.plan.DescriptorSet, p.plan.MessageName)
	need := func() (*protoTypes, error) { return built, buildErr }
	if p.plan.writes() {
		p.step("proto_write", func() (any, error) {
			types, err := need()
			if err != nil {
				return nil, err
			}
			msg := types.message.New().Interface()
			if err := (protojson.UnmarshalOptions{Resolver: types.registry}).Unmarshal(p.plan.ProtoValue, msg); err != nil {
				return nil, err
			}
			conf := protobuf.NewSerializerConfig()
			conf.AutoRegisterSchemas = true
			ser, err := protobuf.NewSerializer(p.client(), serde.ValueSerde, conf)
			if err != nil {
				return nil, err
			}
			data, err := ser.Serialize(topic, msg)
			if err != nil {
				return nil, err
			}
			decoded, err := p.deserializeProtobuf(types, topic, data)
			return map[string]any{"hex": hex.EncodeToString(data), "decoded": decoded}, err
		})
	}
	for _, item := range p.plan.Read {
		p.step("proto_read_"+item.Writer, func() (any, error) {
			types, err := need()
			if err != nil {
				return nil, err
			}
			data, err := hex.DecodeString(item.Hex)
			if err != nil {
				return nil, err
			}
			return p.deserializeProtobuf(types, item.Topic, data)
		})
	}
}

func (p *program) deserializeProtobuf(types *protoTypes, topic string, data []byte) (any, error) {
	des, err := protobuf.NewDeserializer(p.client(), serde.ValueSerde, protobuf.NewDeserializerConfig())
	if err != nil {
		return nil, err
	}
	des.ProtoRegistry = types.registry
	decoded, err := des.Deserialize(topic, data)
	if err != nil {
		return nil, err
	}
	msg, ok := decoded.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("the deserializer answered %T, not a proto.Message", decoded)
	}
	return types.json(msg)
}
