#!/usr/bin/env node
// Checks that DRA claims and DeviceClasses only name what kgpu publishes, so an example cannot ask
// for an attribute or capacity that no kgpu device has (the scheduler would then never allocate
// it, silently). The published names come from kgpu's golden ResourceSlices
// (tests/fixtures/golden/dra/*.json, written by the slice-builder unit tests' fleets).
// Checked: device.attributes['D'].name / device.capacity['D'].name in CEL selectors, constraint
// matchAttribute, and deviceClassName (one of the DeviceClasses the chart creates).
// No CEL evaluation: only the names are checked (no CEL interpreter is available offline).
// Usage: node check-claim-attributes.js GOLDEN.json... -- MANIFEST.yaml...
'use strict';
const fs = require('fs');
const path = require('path');
const YAML = require('yaml');

const DEVICE_CLASSES = new Set(['gpu.nvidia.com', 'mig.nvidia.com', 'gpu-share.kgpu.io']);

// Qualified names ("domain/name") of every attribute and capacity in the golden slices; an
// unqualified name belongs to the slice's driver domain.
function publishedNames(goldenFiles) {
  const attributes = new Set();
  const capacities = new Set();
  const qualify = (driver, name) => (name.includes('/') ? name : `${driver}/${name}`);
  for (const file of goldenFiles) {
    const golden = JSON.parse(fs.readFileSync(file, 'utf8'));
    for (const slice of [...(golden.v1 || []), ...(golden.v1beta1 || [])]) {
      const driver = slice.spec.driver;
      for (const device of slice.spec.devices || []) {
        // v1beta1 nests attributes under `basic`.
        const d = device.basic || device;
        Object.keys(d.attributes || {}).forEach((n) => attributes.add(qualify(driver, n)));
        Object.keys(d.capacity || {}).forEach((n) => capacities.add(qualify(driver, n)));
      }
    }
  }
  return { attributes, capacities };
}

function celReferences(expression) {
  const refs = [];
  const re = /device\.(attributes|capacity)\[\s*(['"])([^'"]+)\2\s*\]\.([A-Za-z_][A-Za-z0-9_]*)/g;
  let m;
  while ((m = re.exec(expression)) !== null) refs.push({ kind: m[1], name: `${m[3]}/${m[4]}` });
  return refs;
}

function checkSelectors(where, selectors, published, problems) {
  for (const s of selectors || []) {
    const expression = (s.cel || {}).expression || '';
    for (const ref of celReferences(expression)) {
      const known = ref.kind === 'attributes' ? published.attributes : published.capacities;
      if (!known.has(ref.name)) problems.push(`${where}: CEL names ${ref.kind === 'attributes' ? 'attribute' : 'capacity'} ${ref.name}, which kgpu does not publish`);
    }
  }
}

function checkDevices(where, devices, published, problems) {
  if (!devices) return;
  for (const r of devices.requests || []) {
    // v1 and v1beta2 nest the class and selectors under `exactly`; v1beta1 has them on the request.
    const alternatives = r.exactly ? [r.exactly] : r.firstAvailable || (r.deviceClassName !== undefined ? [r] : []);
    for (const a of alternatives) {
      if (!DEVICE_CLASSES.has(a.deviceClassName)) problems.push(`${where} request ${r.name}: deviceClassName ${a.deviceClassName} is not one kgpu's chart creates`);
      checkSelectors(`${where} request ${r.name}`, a.selectors, published, problems);
    }
  }
  for (const c of devices.constraints || []) {
    if (c.matchAttribute && !published.attributes.has(c.matchAttribute)) {
      problems.push(`${where}: constraint matchAttribute ${c.matchAttribute} is not an attribute kgpu publishes`);
    }
  }
}

const args = process.argv.slice(2);
const split = args.indexOf('--');
if (split < 1 || split === args.length - 1) {
  console.error('usage: check-claim-attributes.js GOLDEN.json... -- MANIFEST.yaml...');
  process.exit(2);
}
const published = publishedNames(args.slice(0, split));
const problems = [];
let checked = 0;
for (const file of args.slice(split + 1)) {
  YAML.parseAllDocuments(fs.readFileSync(file, 'utf8')).forEach((d, i) => {
    const o = d.toJS();
    if (!o || typeof o.apiVersion !== 'string' || !o.apiVersion.startsWith('resource.k8s.io/')) return;
    const where = `${path.basename(file)}#${i} ${o.kind}/${(o.metadata || {}).name}`;
    const spec = o.spec || {};
    checked++;
    if (o.kind === 'DeviceClass') checkSelectors(where, spec.selectors, published, problems);
    else if (o.kind === 'ResourceClaim') checkDevices(where, spec.devices, published, problems);
    else if (o.kind === 'ResourceClaimTemplate') checkDevices(where, (spec.spec || {}).devices, published, problems);
    else checked--;
  });
}
for (const p of problems) console.error(p);
console.log(`check-claim-attributes: ${checked} DRA objects, ${published.attributes.size} attributes and ${published.capacities.size} capacities published, ${problems.length} problems`);
process.exit(checked === 0 || problems.length ? 1 : 0);
