#!/usr/bin/env node
// validate.js SCHEMA_DIR EVENTS_FILE - every line of EVENTS_FILE is a
// CloudEvent outboxd produced; each must validate against the schema of its
// type (outbox.op.*.v1 -> outbox.op.v1.schema.json, outbox.fee.snapshot.v1 ->
// outbox.fee.snapshot.v1.schema.json). Prints a summary line; exits 1 naming
// the first event that does not validate, 2 on bad usage or no events.
'use strict';
const fs = require('fs');
const path = require('path');
const Ajv2020 = require('ajv/dist/2020').default;

const [schemaDir, eventsFile] = process.argv.slice(2);
if (!schemaDir || !eventsFile) {
	console.error('usage: validate.js SCHEMA_DIR EVENTS_FILE');
	process.exit(2);
}
const ajv = new Ajv2020({ allErrors: true, strict: true });
const load = (f) => ajv.compile(JSON.parse(fs.readFileSync(path.join(schemaDir, f), 'utf8')));
const op = load('outbox.op.v1.schema.json');
const fee = load('outbox.fee.snapshot.v1.schema.json');
const lines = fs.readFileSync(eventsFile, 'utf8').split('\n').filter((l) => l.trim());
if (!lines.length) {
	console.error(`validate.js: ${eventsFile} holds no events`);
	process.exit(2);
}
const byType = {};
lines.forEach((line, i) => {
	let ce;
	try {
		ce = JSON.parse(line);
	} catch (e) {
		console.error(`line ${i + 1}: not JSON: ${e.message}`);
		process.exit(1);
	}
	const check = ce.type === 'outbox.fee.snapshot.v1' ? fee : op;
	if (!check(ce)) {
		console.error(`line ${i + 1} (event ${ce.id}, ${ce.type}): ` + ajv.errorsText(check.errors));
		process.exit(1);
	}
	byType[ce.type] = (byType[ce.type] || 0) + 1;
});
console.log(JSON.stringify({ validated: lines.length, by_type: byType }));
