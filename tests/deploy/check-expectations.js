#!/usr/bin/env node
// Checks facts about rendered manifests, one per line of an expectations file, so that each
// example values file is shown to change what it claims to change:
//   <Kind>/<name> <path> == <JSON value>
//   <Kind>/<name> <path> absent
//   <Kind>/<name> absent                  (the object is not rendered at all)
// <path> is .a.b[0].c, where [key=value] picks the element of a list whose `key` equals value
// (e.g. .spec.template.spec.containers[0].env[name=MIG_STRATEGY].value). '#' starts a comment.
// Usage: node check-expectations.js RENDERED.yaml EXPECTATIONS.txt
'use strict';
const fs = require('fs');
const YAML = require('yaml');

function resolve(obj, path) {
  const re = /\.([^.[\]]+)|\[(\d+)\]|\[([^=\]]+)=([^\]]*)\]/g;
  let cur = obj;
  let consumed = 0;
  let m;
  while ((m = re.exec(path)) !== null) {
    if (m.index !== consumed) throw new Error(`bad path ${path}`);
    consumed = re.lastIndex;
    if (cur === undefined || cur === null) return undefined;
    if (m[1] !== undefined) cur = cur[m[1]];
    else if (m[2] !== undefined) cur = Array.isArray(cur) ? cur[Number(m[2])] : undefined;
    else cur = Array.isArray(cur) ? cur.find((e) => e && String(e[m[3]]) === m[4]) : undefined;
  }
  if (consumed !== path.length) throw new Error(`bad path ${path}`);
  return cur;
}

const [rendered, expectations] = process.argv.slice(2);
if (!rendered || !expectations) {
  console.error('usage: check-expectations.js RENDERED.yaml EXPECTATIONS.txt');
  process.exit(2);
}
const objects = new Map();
for (const d of YAML.parseAllDocuments(fs.readFileSync(rendered, 'utf8'))) {
  const o = d.toJS();
  if (o && o.kind && o.metadata) objects.set(`${o.kind}/${o.metadata.name}`, o);
}
let failures = 0;
let checks = 0;
fs.readFileSync(expectations, 'utf8').split('\n').forEach((raw, i) => {
  const line = raw.replace(/#.*$/, '').trim();
  if (!line) return;
  checks++;
  const whole = line.match(/^(\S+)\s+absent$/);
  if (whole) {
    if (objects.has(whole[1])) {
      console.error(`${expectations}:${i + 1}: ${whole[1]} should not be rendered`);
      failures++;
    }
    return;
  }
  const m = line.match(/^(\S+)\s+(\S+)\s+(==\s+(.+)|absent)$/);
  const where = `${expectations}:${i + 1}`;
  if (!m) {
    console.error(`${where}: cannot parse: ${raw}`);
    failures++;
    return;
  }
  const [, id, path, , expected] = m;
  const obj = objects.get(id);
  if (!obj) {
    console.error(`${where}: no object ${id} (have: ${[...objects.keys()].join(', ')})`);
    failures++;
    return;
  }
  const actual = resolve(obj, path);
  if (expected === undefined) {
    if (actual !== undefined) {
      console.error(`${where}: ${id} ${path} should be absent, is ${JSON.stringify(actual)}`);
      failures++;
    }
    return;
  }
  if (JSON.stringify(actual) !== JSON.stringify(JSON.parse(expected))) {
    console.error(`${where}: ${id} ${path} is ${JSON.stringify(actual)}, expected ${expected}`);
    failures++;
  }
});
console.log(`check-expectations: ${checks} checks, ${failures} failed`);
if (checks === 0) process.exit(1);
process.exit(failures ? 1 : 0);
