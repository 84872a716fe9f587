// Input objects for the allocator: reading YAML/JSON files (multi-document, Lists, kgpu's golden
// {"v1": [...], "v1beta1": [...]} shape), and turning ResourceSlices, DeviceClasses and
// ResourceClaims (or ResourceClaimTemplates) of resource.k8s.io v1, v1beta2 or v1beta1 into the
// one internal shape the allocator reads: v1 field names, API defaults applied (allocationMode
// ExactCount, count 1, toleration operator Equal) and quantities parsed. Bad input throws.
'use strict';

const fs = require('fs');
const YAML = require('yaml');
const { Quantity } = require('./quantity.js');

// Every Kubernetes object in `file` (documents, List items, golden files' v1 list).
function loadObjects(file) {
  const text = fs.readFileSync(file, 'utf8');
  const out = [];
  const visit = (o) => {
    if (!o || typeof o !== 'object') return;
    if (Array.isArray(o)) return o.forEach(visit);
    if (o.kind && o.kind.endsWith('List') && Array.isArray(o.items)) return o.items.forEach(visit);
    if (!o.kind && (Array.isArray(o.v1) || Array.isArray(o.v1beta1))) return visit(o.v1 || o.v1beta1);
    if (o.kind) out.push(o);
  };
  for (const doc of YAML.parseAllDocuments(text)) {
    if (doc.errors && doc.errors.length) throw new Error(`${file}: ${doc.errors[0].message}`);
    visit(doc.toJS());
  }
  return out;
}

function quantity(v, where) {
  if (v instanceof Quantity) return v;
  try {
    return Quantity.parse(typeof v === 'number' ? String(v) : v);
  } catch (e) {
    throw new Error(`${where}: ${e.message}`);
  }
}

function counters(map, where) {
  const out = {};
  for (const [name, c] of Object.entries(map || {})) out[name] = quantity(c && c.value, `${where}.${name}`);
  return out;
}

function capacities(map, where) {
  const out = {};
  for (const [name, c] of Object.entries(map || {})) {
    const at = `${where}.${name}`;
    const cap = { value: quantity(c && c.value, at) };
    const p = c && c.requestPolicy;
    if (p) {
      cap.requestPolicy = {};
      if (p.default !== undefined) cap.requestPolicy.default = quantity(p.default, `${at}.requestPolicy.default`);
      if (p.validValues) cap.requestPolicy.validValues = p.validValues.map((v) => quantity(v, `${at}.requestPolicy.validValues`));
      if (p.validRange) {
        const r = {};
        for (const k of ['min', 'max', 'step']) {
          if (p.validRange[k] !== undefined) r[k] = quantity(p.validRange[k], `${at}.requestPolicy.validRange.${k}`);
        }
        cap.requestPolicy.validRange = r;
      }
    }
    out[name] = cap;
  }
  return out;
}

// A ResourceSlice of any served version, v1-shaped (v1beta1 keeps a device's fields under `basic`).
function normalizeSlice(obj) {
  const spec = obj.spec || {};
  const name = (obj.metadata && obj.metadata.name) || '';
  if (!spec.driver || !spec.pool || !spec.pool.name) throw new Error(`ResourceSlice ${name}: spec.driver and spec.pool.name are required`);
  const devices = (spec.devices || []).map((d, i) => {
    const b = d.basic ? Object.assign({ name: d.name }, d.basic) : d;
    const where = `ResourceSlice ${name} device ${b.name || i}`;
    if (!b.name) throw new Error(`${where}: no name`);
    return {
      name: b.name,
      attributes: b.attributes || {},
      capacity: capacities(b.capacity, `${where} capacity`),
      consumesCounters: (b.consumesCounters || []).map((c) => ({
        counterSet: c.counterSet,
        counters: counters(c.counters, `${where} consumesCounters ${c.counterSet}`),
      })),
      taints: b.taints || [],
      allowMultipleAllocations: b.allowMultipleAllocations === true,
      nodeName: b.nodeName,
      allNodes: b.allNodes,
      nodeSelector: b.nodeSelector,
      bindsToNode: b.bindsToNode === true,
      bindingConditions: b.bindingConditions,
      bindingFailureConditions: b.bindingFailureConditions,
    };
  });
  return {
    name,
    driver: spec.driver,
    pool: {
      name: spec.pool.name,
      generation: Number(spec.pool.generation || 0),
      resourceSliceCount: Number(spec.pool.resourceSliceCount || 0),
    },
    nodeName: spec.nodeName,
    allNodes: spec.allNodes,
    nodeSelector: spec.nodeSelector,
    perDeviceNodeSelection: spec.perDeviceNodeSelection,
    sharedCounters: (spec.sharedCounters || []).map((s) => ({
      name: s.name,
      counters: counters(s.counters, `ResourceSlice ${name} sharedCounters ${s.name}`),
    })),
    devices,
  };
}

function normalizeClass(obj) {
  const spec = obj.spec || {};
  return { name: obj.metadata.name, selectors: spec.selectors || [], config: spec.config || [] };
}

function tolerations(list) {
  return (list || []).map((t) => Object.assign({}, t, { operator: t.operator || 'Equal' }));
}

function capacityRequests(c, where) {
  if (!c) return undefined;
  const requests = {};
  for (const [name, v] of Object.entries(c.requests || {})) requests[name] = quantity(v, `${where} capacity.requests.${name}`);
  return { requests };
}

// The fields ExactDeviceRequest and DeviceSubRequest share, with the API's defaults.
function exact(r, where) {
  if (!r.deviceClassName) throw new Error(`${where}: deviceClassName is required`);
  const mode = r.allocationMode || 'ExactCount';
  return {
    deviceClassName: r.deviceClassName,
    selectors: r.selectors || [],
    allocationMode: mode,
    count: mode === 'ExactCount' ? Number(r.count || 1) : Number(r.count || 0),
    adminAccess: r.adminAccess,
    tolerations: tolerations(r.tolerations),
    capacity: capacityRequests(r.capacity, where),
  };
}

// A ResourceClaim or ResourceClaimTemplate (its .spec.spec) of v1, v1beta2 or v1beta1.
function normalizeClaim(obj) {
  const meta = obj.metadata || {};
  const id = `${obj.kind} ${meta.namespace ? `${meta.namespace}/` : ''}${meta.name}`;
  let spec;
  if (obj.kind === 'ResourceClaimTemplate') spec = obj.spec && obj.spec.spec;
  else if (obj.kind === 'ResourceClaim') spec = obj.spec;
  else throw new Error(`${obj.kind} ${meta.name}: not a ResourceClaim or ResourceClaimTemplate`);
  const devices = (spec && spec.devices) || {};
  const requests = (devices.requests || []).map((r) => {
    const where = `${id} request ${r.name}`;
    if (!r.name) throw new Error(`${id}: a request has no name`);
    if (r.firstAvailable && r.firstAvailable.length) {
      return {
        name: r.name,
        firstAvailable: r.firstAvailable.map((s) => Object.assign({ name: s.name }, exact(s, `${where}/${s.name}`))),
      };
    }
    // v1beta1 puts the fields on the request itself; v1 and v1beta2 under `exactly`.
    return { name: r.name, exactly: exact(r.exactly || r, where) };
  });
  return {
    name: meta.name,
    namespace: meta.namespace,
    uid: meta.uid,
    kind: obj.kind,
    requests,
    constraints: devices.constraints || [],
    config: devices.config || [],
    allocation: obj.status && obj.status.allocation,
  };
}

// Everything in `objects` sorted by kind into the allocator's inputs.
function sortInputs(objects) {
  const out = { slices: [], classes: [], claims: [] };
  for (const o of objects) {
    if (o.kind === 'ResourceSlice') out.slices.push(normalizeSlice(o));
    else if (o.kind === 'DeviceClass') out.classes.push(normalizeClass(o));
    else if (o.kind === 'ResourceClaim' || o.kind === 'ResourceClaimTemplate') out.claims.push(normalizeClaim(o));
  }
  return out;
}

module.exports = { loadObjects, normalizeSlice, normalizeClass, normalizeClaim, sortInputs };
