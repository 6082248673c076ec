// @confluentinc/schemaregistry (Confluent's JavaScript client and Avro serdes) against
// a registry: the API scenario, its serializer and deserializer, a CEL data-contract
// rule, the ASSOCIATED subject strategy, and reading other clients' bytes.
'use strict';

const {
  AvroDeserializer, AvroSerializer, CelExecutor, CelFieldExecutor, JsonDeserializer, JsonSerializer,
  ProtobufDeserializer, ProtobufSerializer, RuleRegistry, SchemaRegistryClient, SerdeType, SubjectNameStrategyType,
} = require('@confluentinc/schemaregistry');
// The Protobuf runtime @confluentinc/schemaregistry is built on (its own dependency).
const { createFileRegistry, createMutableRegistry, fromBinary, fromJson, toJson } = require('@bufbuild/protobuf');
const { FileDescriptorSetSchema } = require('@bufbuild/protobuf/wkt');
const { main, hex, unhex } = require('./protocol');

// A client of its own per use, so no cache hides what the server answers.
const newClient = (url) => new SchemaRegistryClient({ baseURLs: [url], cacheCapacity: 1000, maxRetries: 0 });
const avro = (schema, extra = {}) => ({ schema, schemaType: 'AVRO', ...extra });
const meta = (m) => ({ id: m.id, version: m.version, subject: m.subject, schema: m.schema });

// Rule executors are looked up in a registry; one of our own keeps the global one clean.
const rules = new RuleRegistry();
rules.registerExecutor(new CelExecutor());
rules.registerExecutor(new CelFieldExecutor());

const serializer = (client, conf = {}) =>
  new AvroSerializer(client, SerdeType.VALUE, { autoRegisterSchemas: true, ...conf }, rules);
// Without a schema of its own, this serializer would register one inferred from the value
// (avsc's forValue); the scenario's writer schema is registered first and used as latest.
async function writeV1(url, schemas, topic, value) {
  await newClient(url).register(`${topic}-value`, avro(schemas.v1));
  const ser = serializer(newClient(url), { autoRegisterSchemas: false, useLatestVersion: true });
  return ser.serialize(topic, value);
}
const deserializer = (client) => new AvroDeserializer(client, SerdeType.VALUE, {}, rules);

async function apiScenario(plan, report) {
  const { url, schemas } = plan;
  const client = newClient(url);
  const subject = `${plan.prefix}-api`;
  await report.step('register', async () => meta(await client.registerFullResponse(subject, avro(schemas.v1))));
  const id = report.steps.register.value && report.steps.register.value.id;
  await report.step('get_by_id', async () => (await newClient(url).getBySubjectAndId(subject, id)).schema);
  await report.step('get_version', async () => meta(await newClient(url).getSchemaMetadata(subject, 1)));
  await report.step('get_latest', async () => meta(await newClient(url).getLatestSchemaMetadata(subject)));
  await report.step('lookup', async () => meta(await newClient(url).getIdFullResponse(subject, avro(schemas.v1))));
  await report.step('compat_ok', () => newClient(url).testSubjectCompatibility(subject, avro(schemas.v2)));
  await report.step('compat_bad', () => newClient(url).testSubjectCompatibility(subject, avro(schemas.incompatible)));
  await report.step('register_v2', async () => meta(await client.registerFullResponse(subject, avro(schemas.v2))));
  await report.step('versions', () => client.getAllVersions(subject));
  await report.step('config_set', async () => (await client.updateConfig(subject, { compatibility: 'FULL' })).compatibility);
  await report.step('config_get', async () => {
    const config = await client.getConfig(subject);
    return config.compatibilityLevel || config.compatibility;
  });
  await report.step('soft_delete', async () => ({
    deleted: await client.deleteSubjectVersion(subject, 2, false),
    versions: await newClient(url).getAllVersions(subject),
  }));
  await report.step('hard_delete', async () => ({
    deleted_version: await client.deleteSubjectVersion(subject, 2, true),
    deleted_subject: await client.deleteSubject(subject, false),
    purged_subject: await client.deleteSubject(subject, true),
    listed: (await newClient(url).getAllSubjects()).includes(subject),
  }));
}

async function serdeScenario(plan, report) {
  const { url, prefix, schemas, value } = plan;
  const topic = `${prefix}-rt`;
  await report.step('roundtrip', async () => {
    const bytes = await writeV1(url, schemas, topic, value);
    return { hex: hex(bytes), decoded: await deserializer(newClient(url)).deserialize(topic, bytes) };
  });
  const written = report.steps.roundtrip.ok ? unhex(report.steps.roundtrip.value.hex) : null;
  const need = () => {
    if (!written) throw new Error('no bytes: the roundtrip step failed');
    return written;
  };
  // A consumer on a mirror of the topic: `<mirror>-value` does not exist.
  await report.step('mirror_topic', async () =>
    deserializer(newClient(url)).deserialize(`${prefix}-mirror`, need()));
  // ... and on a topic whose `-value` subject holds other schemas, not the writer's.
  await report.step('mirror_other_subject', async () => {
    await newClient(url).register(`${prefix}-other-value`, avro(schemas.other));
    return deserializer(newClient(url)).deserialize(`${prefix}-other`, need());
  });
  // The writer's subject hard-deleted; the id lives on under another subject.
  await report.step('deleted_subject', async () => {
    const client = newClient(url);
    const gone = `${prefix}-gone`;
    const bytes = await writeV1(url, schemas, gone, value);
    await client.register(`${prefix}-keep`, avro(schemas.v1));
    await client.deleteSubject(`${gone}-value`, false);
    await client.deleteSubject(`${gone}-value`, true);
    return deserializer(newClient(url)).deserialize(gone, bytes);
  });
}

async function ruleScenario(plan, report) {
  const { url, prefix, schemas } = plan;
  const topic = `${prefix}-rule`;
  await report.step('rule', async () => {
    const client = newClient(url);
    const registered = await client.registerFullResponse(`${topic}-value`,
      avro(schemas.rule, { ruleSet: plan.rule_set }));
    const stored = await newClient(url).getLatestSchemaMetadata(`${topic}-value`);
    const ser = serializer(newClient(url), { autoRegisterSchemas: false, useLatestVersion: true });
    const good = await ser.serialize(topic, plan.rule_good);
    let badError = null;
    try {
      await ser.serialize(topic, plan.rule_bad);
    } catch (err) {
      badError = `${err.name}: ${err.message}`;
    }
    return {
      id: registered.id,
      stored_rule_set: stored.ruleSet || null,
      good_decoded: await deserializer(newClient(url)).deserialize(topic, good),
      good_id: good.readUInt32BE(1),
      bad_error: badError,
    };
  });
}

async function associatedScenario(plan, report) {
  const { url, prefix, schemas, value } = plan;
  const topic = `${prefix}-assoc`;
  const target = `${prefix}-assoc-target`;
  await report.step('associated', async () => {
    const client = newClient(url);
    await client.register(target, avro(schemas.v1));
    await client.createAssociation({
      resourceName: topic, resourceNamespace: 'lkc-interop', resourceId: `${topic}-id`, resourceType: 'topic',
      associations: [{ subject: target, associationType: 'value' }],
    });
    const found = await newClient(url).getAssociationsByResourceName(topic, '-', 'topic', ['value'], null, 0, -1);
    const ser = new AvroSerializer(newClient(url), SerdeType.VALUE, {
      autoRegisterSchemas: false, useLatestVersion: true, subjectNameStrategyType: SubjectNameStrategyType.ASSOCIATED,
    }, rules);
    const bytes = await ser.serialize(topic, value);
    const subjects = await newClient(url).getAllSubjects();
    return {
      found: found.map((a) => a.subject),
      target_versions: await newClient(url).getAllVersions(target),
      topic_subject_created: subjects.includes(`${topic}-value`),
      decoded: await deserializer(newClient(url)).deserialize(topic, bytes),
    };
  });
}

async function readPayloads(plan, report) {
  const des = deserializer(newClient(plan.url));
  for (const item of plan.read) {
    await report.step(item.writer, () => des.deserialize(item.topic, unhex(item.hex)));
  }
}

// JSON Schema: this library's JsonSerializer writes under `<prefix>-json-value` (the
// schema registered first, used as latest, values validated), its JsonDeserializer reads
// those bytes back and every other writer's bytes in `plan.read`. With `write: false`
// the plan only reads (bytes written after this program's own write).
async function jsonScenario(plan, report) {
  const { url, prefix } = plan;
  const topic = `${prefix}-json`;
  const jsonDeserializer = () => new JsonDeserializer(newClient(url), SerdeType.VALUE, { validate: true }, rules);
  if (plan.write !== false) await report.step('json_write', async () => {
    await newClient(url).register(`${topic}-value`, { schema: plan.json_schema, schemaType: 'JSON' });
    const ser = new JsonSerializer(newClient(url), SerdeType.VALUE,
      { autoRegisterSchemas: false, useLatestVersion: true, validate: true }, rules);
    const bytes = await ser.serialize(topic, plan.json_value);
    return { hex: hex(bytes), decoded: await jsonDeserializer().deserialize(topic, bytes) };
  });
  for (const item of plan.read || []) {
    await report.step(`json_read_${item.writer}`, () => jsonDeserializer().deserialize(item.topic, unhex(item.hex)));
  }
}

// Protobuf: the message type comes from a FileDescriptorSet in the plan (base64), as
// generated code would bring it; this library's ProtobufSerializer registers its file
// (imports as references) and writes `plan.proto_value` (proto3 JSON) under
// `<prefix>-proto`; its ProtobufDeserializer, which learns the schema from the registry
// (?format=serialized), reads those bytes and every other writer's in `plan.read`,
// answering proto3 JSON. With `write: false` the plan only reads.
async function protobufScenario(plan, report) {
  const { url, prefix } = plan;
  const topic = `${prefix}-proto`;
  const files = createFileRegistry(fromBinary(FileDescriptorSetSchema, Buffer.from(plan.descriptor_set, 'base64')));
  const desc = files.getMessage(plan.message_name);
  const types = createMutableRegistry(desc);
  const protobufDeserializer = () => new ProtobufDeserializer(newClient(url), SerdeType.VALUE, {}, rules);
  if (plan.write !== false) await report.step('proto_write', async () => {
    const ser = new ProtobufSerializer(newClient(url), SerdeType.VALUE, { autoRegisterSchemas: true, registry: types },
      rules);
    const bytes = await ser.serialize(topic, fromJson(desc, plan.proto_value, { registry: types }));
    const decoded = await protobufDeserializer().deserialize(topic, bytes);
    return { hex: hex(bytes), decoded: toJson(desc, decoded, { registry: types }) };
  });
  for (const item of plan.read || []) {
    await report.step(`proto_read_${item.writer}`, async () =>
      toJson(desc, await protobufDeserializer().deserialize(item.topic, unhex(item.hex)), { registry: types }));
  }
}

main(async (plan, report) => {
  if (plan.mode === 'read') return readPayloads(plan, report);
  if (plan.mode === 'json') return jsonScenario(plan, report);
  if (plan.mode === 'protobuf') return protobufScenario(plan, report);
  await apiScenario(plan, report);
  await serdeScenario(plan, report);
  await ruleScenario(plan, report);
  await associatedScenario(plan, report);
});
