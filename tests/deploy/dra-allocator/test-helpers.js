// Small builders for the simulator's tests: v1 ResourceSlices, DeviceClasses and claims written
// as the API would hold them, and a run() that allocates claims in order as allocate.js does.
'use strict';

const { normalizeSlice, normalizeClass, normalizeClaim } = require('./objects.js');
const { loadDeviceCel } = require('./cel-env.js');
const { allocateInOrder, sequentialShareIDs } = require('./allocate.js');

const DRIVER = 'gpu.nvidia.com';

// A device: string attributes by default; `attrs` holds typed ones ({int}, {version}, ...).
function device(name, { type = 'gpu', memory = '80Gi', attrs = {}, capacity, taints, multi, consumes } = {}) {
  const d = {
    name,
    attributes: Object.assign({ type: { string: type } }, attrs),
    capacity: capacity || { memory: { value: memory } },
  };
  if (taints) d.taints = taints;
  if (multi) d.allowMultipleAllocations = true;
  if (consumes) d.consumesCounters = consumes;
  return d;
}

function slice(devices, { name = 'node-1-gpu.nvidia.com-0', pool = 'node-1', node = 'node-1', generation = 1, count = 1, driver = DRIVER, sharedCounters } = {}) {
  const spec = { driver, pool: { name: pool, generation, resourceSliceCount: count }, devices };
  if (node) spec.nodeName = node;
  else spec.allNodes = true;
  if (sharedCounters) spec.sharedCounters = sharedCounters;
  return { apiVersion: 'resource.k8s.io/v1', kind: 'ResourceSlice', metadata: { name }, spec };
}

function deviceClass(name, expression, config) {
  const spec = { selectors: [{ cel: { expression } }] };
  if (config) spec.config = config;
  return { apiVersion: 'resource.k8s.io/v1', kind: 'DeviceClass', metadata: { name }, spec };
}

// kgpu's classes (deploy/static/kgpu-dra.yaml) and the share class of issue 37's design.
const CLASSES = [
  deviceClass('gpu.nvidia.com', "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"),
  deviceClass('mig.nvidia.com', "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'"),
  deviceClass('gpu-share.kgpu.io', "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu-share'"),
];

// A request: `exactly` fields (deviceClassName defaults to gpu.nvidia.com); selectors given as strings.
function request(name, fields = {}) {
  const exactly = Object.assign({ deviceClassName: 'gpu.nvidia.com' }, fields);
  if (fields.selectors) exactly.selectors = fields.selectors.map((expression) => ({ cel: { expression } }));
  return { name, exactly };
}

function claim(name, requests, { constraints, config, allocation } = {}) {
  const devices = { requests };
  if (constraints) devices.constraints = constraints;
  if (config) devices.config = config;
  const c = { apiVersion: 'resource.k8s.io/v1', kind: 'ResourceClaim', metadata: { name, namespace: 'default' }, spec: { devices } };
  if (allocation) c.status = { allocation };
  return c;
}

let celPromise;
function cel() {
  celPromise = celPromise || loadDeviceCel();
  return celPromise;
}

// Allocates `claims` in order; returns allocate.js's output entries.
async function run(slices, claims, { classes = CLASSES, allocated = [], node = { name: 'node-1' } } = {}) {
  const { compile } = await cel();
  return allocateInOrder({
    slices: slices.map(normalizeSlice),
    classes: classes.map(normalizeClass),
    claims: claims.map(normalizeClaim),
    allocated: allocated.map(normalizeClaim),
    node,
    compile,
    newShareID: sequentialShareIDs(),
  });
}

// The device names of one output entry's results (throws with the error when it has none).
function devicesOf(entry) {
  if (!entry.allocation) throw new Error(`${entry.claim}: ${entry.error}`);
  return entry.allocation.devices.results.map((r) => r.device);
}

module.exports = { DRIVER, device, slice, deviceClass, CLASSES, request, claim, run, devicesOf, cel };
