// The protocol every interop program speaks (tests/interop/clients.py says it in full):
// a JSON plan on stdin, a JSON report on stdout, one entry per step.
//
// A step that throws is reported, not fatal: the other steps still run, so one server
// bug shows as one failed step in the pytest matrix instead of hiding the rest.
'use strict';

async function readPlan() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

function describeError(err) {
  const out = { ok: false, error: String((err && err.message) || err) };
  // RestError (@confluentinc/schemaregistry) and mappersmith responses (kafkajs).
  if (err && typeof err.status === 'number') out.status = err.status;
  if (err && typeof err.errorCode === 'number') out.error_code = err.errorCode;
  if (err && err.name) out.type = err.name;
  return out;
}

class Report {
  constructor() {
    this.steps = {};
  }

  // Runs `fn`, records {ok: true, value} or the error it threw.
  async step(name, fn) {
    try {
      this.steps[name] = { ok: true, value: await fn() };
    } catch (err) {
      this.steps[name] = describeError(err);
    }
    return this.steps[name];
  }

  print() {
    process.stdout.write(JSON.stringify({ steps: this.steps }) + '\n');
  }
}

// Runs `body(plan, report)` and prints the report; exits non-zero only when the program
// itself is broken (bad plan, a bug outside any step), with the reason on stderr.
function main(body) {
  readPlan()
    .then(async (plan) => {
      const report = new Report();
      await body(plan, report);
      report.print();
    })
    .catch((err) => {
      process.stderr.write(`interop program failed outside any step: ${(err && err.stack) || err}\n`);
      process.exit(2);
    });
}

const hex = (buffer) => Buffer.from(buffer).toString('hex');
const unhex = (text) => Buffer.from(text, 'hex');

module.exports = { main, hex, unhex };
