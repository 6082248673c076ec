// Drives @kafkajs/confluent-schema-registry against a registry, for tests/api/test_security_clients.py.
// Usage: node client.mjs '<json>' with {url, subject, schema, username?, password?, ca?, cert?, key?}.
// Registers the Avro schema, encodes a record with the id it got and decodes it back; prints
// {"id", "decoded"} as JSON, or {"error", "status"} and exits 3 when the registry refuses.
import fs from 'node:fs'
import https from 'node:https'
import { SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry'

const config = JSON.parse(process.argv[2])
const args = { host: config.url, retry: { retries: 0 } }
if (config.username) args.auth = { username: config.username, password: config.password }
if (config.ca) {
  args.agent = new https.Agent({
    ca: fs.readFileSync(config.ca),
    cert: config.cert ? fs.readFileSync(config.cert) : undefined,
    key: config.key ? fs.readFileSync(config.key) : undefined,
  })
}
const registry = new SchemaRegistry(args)
try {
  const { id } = await registry.register({ type: SchemaType.AVRO, schema: config.schema }, { subject: config.subject })
  const decoded = await registry.decode(await registry.encode(id, { a: 42 }))
  console.log(JSON.stringify({ id, decoded }))
} catch (error) {
  console.log(JSON.stringify({ error: String(error.message), status: error.status ?? null, code: error.code ?? null }))
  process.exit(3)
}
