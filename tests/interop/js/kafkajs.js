// @kafkajs/confluent-schema-registry against a registry: what its client can do
// (register, read, look up, compatibility, config; it has no delete), its encode and
// decode (decode takes no topic, so there is no mirror case), and reading other
// clients' bytes.
'use strict';

const { SchemaRegistry, SchemaType } = require('@kafkajs/confluent-schema-registry');
const { main, hex, unhex } = require('./protocol');

// No retries: a failure should show at once, not after mappersmith's backoff.
const newRegistry = (url) => new SchemaRegistry({ host: url, retry: { retries: 0 } });
const avro = (schema) => ({ type: SchemaType.AVRO, schema });
const data = async (request) => (await request).data();

async function scenario(plan, report) {
  const { url, prefix, schemas, value } = plan;
  const registry = newRegistry(url);
  const subject = `${prefix}-api`;
  await report.step('register', () => registry.register(avro(schemas.v1), { subject }));
  await report.step('get_by_id', async () => {
    const id = report.steps.register.value.id;
    // getSchema() answers a parsed avsc Type; the registry's text is what we compare.
    return (await data(newRegistry(url).api.Schema.find({ id }))).schema;
  });
  await report.step('get_version', async () => ({ id: await newRegistry(url).getRegistryId(subject, 1) }));
  await report.step('get_latest', async () => ({ id: await newRegistry(url).getLatestSchemaId(subject) }));
  await report.step('lookup', async () => ({
    id: await newRegistry(url).getRegistryIdBySchema(subject, avro(schemas.v1)),
  }));
  const compatible = async (schema) => (await data(newRegistry(url).api.Subject.compatible({
    subject, version: 'latest', body: { schema },
  }))).is_compatible;
  await report.step('compat_ok', () => compatible(schemas.v2));
  await report.step('compat_bad', () => compatible(schemas.incompatible));
  await report.step('register_v2', () => registry.register(avro(schemas.v2), { subject }));
  await report.step('config_set', async () =>
    (await data(registry.api.Subject.updateConfig({ subject, body: { compatibility: 'FULL' } }))).compatibility);
  await report.step('config_get', async () =>
    (await data(newRegistry(url).api.Subject.config({ subject }))).compatibilityLevel);

  await report.step('roundtrip', async () => {
    const { id } = await newRegistry(url).register(avro(schemas.v1), { subject: `${prefix}-rt-value` });
    const bytes = await newRegistry(url).encode(id, value);
    return { hex: hex(bytes), decoded: await newRegistry(url).decode(bytes) };
  });
}

async function readPayloads(plan, report) {
  const registry = newRegistry(plan.url);
  for (const item of plan.read) {
    await report.step(item.writer, () => registry.decode(unhex(item.hex)));
  }
}

main((plan, report) => (plan.mode === 'read' ? readPayloads(plan, report) : scenario(plan, report)));
