#!/usr/bin/env node
// Allocates ResourceClaims the way kube-scheduler 1.34 does (k8s.io/dynamic-resource-allocation
// structured v0.34.0, every DRA feature gate on; see README.md for what is and is not simulated).
//
// Usage:
//   node allocate.js --slices FILE... --classes FILE... --claims FILE...
//                    [--allocated FILE...] [--node NAME] [--node-labels k=v,k2=v2] [--sequential-share-ids]
//
// Every option takes one file and may be repeated. Files are YAML or JSON, multi-document; Lists
// are unpacked; objects of other kinds are ignored, so a whole manifest (deploy/static/kgpu-dra.yaml)
// can be given as --classes.
//   --slices     ResourceSlices (v1, v1beta2 or v1beta1), or kgpu's golden {"v1": [...], "v1beta1": [...]}
//   --classes    DeviceClasses
//   --claims     ResourceClaims and ResourceClaimTemplates (a template's .spec.spec), allocated in
//                file and document order; each is one scheduling attempt of its own (one pod with
//                one claim) and sees the devices the earlier ones got.
//   --allocated  ResourceClaims with status.allocation: their devices are in use (results with a
//                shareID consume their consumedCapacity instead).
//   --node       the node the pod is scheduled to (default: the nodeName of the first node-local slice);
//                slices of other nodes are not used. --node-labels: its labels, for slices' nodeSelectors.
//   --sequential-share-ids  shareIDs 00000000-0000-4000-8000-000000000001, ...2, ... instead of random UUIDs.
//
// Output (stdout, JSON): an array with one entry per claim, in input order:
//   {"claim": "ns/name", "allocation": {"devices": {"results": [{"request", "driver", "pool", "device",
//     "shareID"?, "consumedCapacity"?, "adminAccess"?}], "config"?: [...]}, "nodeSelector"?: {...}}}
//   {"claim": "ns/name", "error": "why it cannot be allocated"}
// Exit status: 0 when it ran (also when claims could not be allocated), 2 on bad usage or input.
'use strict';

const crypto = require('crypto');
const { loadObjects, sortInputs } = require('./objects.js');
const { loadDeviceCel } = require('./cel-env.js');
const { Allocator, AllocationError, addAllocationToState, emptyState } = require('./allocator.js');
const { explain } = require('./explain.js');

function parseArgs(argv) {
  const opts = { slices: [], classes: [], claims: [], allocated: [], node: undefined, labels: {}, sequential: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--slices') opts.slices.push(next());
    else if (a === '--classes') opts.classes.push(next());
    else if (a === '--claims') opts.claims.push(next());
    else if (a === '--allocated') opts.allocated.push(next());
    else if (a === '--node') opts.node = next();
    else if (a === '--node-labels') {
      for (const kv of next().split(',').filter(Boolean)) {
        const eq = kv.indexOf('=');
        if (eq < 0) throw new Error(`--node-labels: ${kv} is not key=value`);
        opts.labels[kv.slice(0, eq)] = kv.slice(eq + 1);
      }
    } else if (a === '--sequential-share-ids') opts.sequential = true;
    else throw new Error(`unknown argument ${a}`);
  }
  if (!opts.slices.length || !opts.classes.length || !opts.claims.length) {
    throw new Error('--slices, --classes and --claims are required');
  }
  return opts;
}

const collect = (files, kind) => sortInputs(files.flatMap(loadObjects))[kind];

// Allocates `claims` one after the other; returns the output array. `compile` from loadDeviceCel.
function allocateInOrder({ slices, classes, claims, allocated, node, compile, newShareID }) {
  const state = emptyState();
  for (const claim of allocated || []) addAllocationToState(state, claim.allocation);
  return claims.map((claim) => {
    const name = claim.namespace ? `${claim.namespace}/${claim.name}` : claim.name;
    const allocator = new Allocator({ slices, classes, compile, state, node, newShareID });
    try {
      const result = allocator.allocate([claim]);
      if (!result) return { claim: name, error: `cannot allocate all claims: ${explain(allocator, claim)}` };
      addAllocationToState(state, result[0]);
      return { claim: name, allocation: result[0] };
    } catch (e) {
      if (e instanceof AllocationError) return { claim: name, error: e.message };
      throw e;
    }
  });
}

function sequentialShareIDs() {
  let n = 0;
  return () => `00000000-0000-4000-8000-${String(++n).padStart(12, '0')}`;
}

async function main() {
  let opts;
  let inputs;
  try {
    opts = parseArgs(process.argv.slice(2));
    inputs = {
      slices: collect(opts.slices, 'slices'),
      classes: collect(opts.classes, 'classes'),
      claims: collect(opts.claims, 'claims'),
      allocated: collect(opts.allocated, 'claims'),
    };
  } catch (e) {
    process.stderr.write(`allocate.js: ${e.message}\n`);
    return 2;
  }
  const nodeName = opts.node || (inputs.slices.find((s) => s.nodeName) || {}).nodeName;
  const { compile } = await loadDeviceCel();
  const out = allocateInOrder(
    Object.assign(inputs, {
      node: { name: nodeName, labels: opts.labels },
      compile,
      newShareID: opts.sequential ? sequentialShareIDs() : () => crypto.randomUUID(),
    }),
  );
  process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
  return 0;
}

if (require.main === module) {
  main().then(
    (code) => process.exit(code),
    (e) => {
      process.stderr.write(`allocate.js: ${e.stack || e}\n`);
      process.exit(2);
    },
  );
}

module.exports = { allocateInOrder, sequentialShareIDs };
