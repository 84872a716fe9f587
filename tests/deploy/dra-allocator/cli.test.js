// allocate.js as the e2e tests call it: files in, a JSON entry per claim out; exit 0 when it ran
// (unsatisfiable claims included), 2 on bad input.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { spawnSync } = require('child_process');

const root = path.resolve(__dirname, '../../..');
const cli = path.join(__dirname, 'allocate.js');
const golden = (f) => path.join(root, 'tests/fixtures/golden/dra', f);
const classes = path.join(root, 'deploy/static/kgpu-dra.yaml');

function runCli(args) {
  const r = spawnSync(process.execPath, [cli, ...args], { encoding: 'utf8' });
  return { status: r.status, out: r.stdout, err: r.stderr };
}

test('allocates examples in order on a golden fleet, v1 and v1beta1 claims alike', () => {
  const r = runCli([
    '--slices', golden('dgx-a100.json'), '--classes', classes,
    '--claims', path.join(root, 'deploy/examples/two-gpus-nvlink.yaml'),
    '--claims', path.join(root, 'deploy/examples/v1beta1/gpu-40gi.yaml'),
    '--sequential-share-ids',
  ]);
  assert.equal(r.status, 0, r.err);
  const out = JSON.parse(r.out);
  assert.deepEqual(out.map((e) => e.claim), ['two-gpus-nvlink', 'gpu-40gi']);
  const devices = out.flatMap((e) => e.allocation.devices.results.map((x) => x.device));
  assert.equal(new Set(devices).size, 3, 'three different GPUs');
  assert.deepEqual(out[1].allocation.nodeSelector.nodeSelectorTerms[0].matchFields[0].values, ['node-1']);
});

test('an unsatisfiable claim is an error entry, exit 0; already allocated devices are not reused', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dra-cli-'));
  const allocated = {
    apiVersion: 'resource.k8s.io/v1', kind: 'ResourceClaim', metadata: { name: 'old', namespace: 'a' },
    spec: { devices: { requests: [] } },
    status: { allocation: { devices: { results: ['gpu-0', 'gpu-2', 'gpu-3'].map((device) => ({ request: 'gpu', driver: 'gpu.nvidia.com', pool: 'node-1', device })) } } },
  };
  fs.writeFileSync(path.join(dir, 'allocated.json'), JSON.stringify(allocated));
  const r = runCli(['--slices', golden('gh200-x4.json'), '--classes', classes, '--allocated', path.join(dir, 'allocated.json'),
    '--claims', path.join(root, 'deploy/examples/gpu-40gi.yaml')]);
  assert.equal(r.status, 0, r.err);
  const [entry] = JSON.parse(r.out);
  assert.match(entry.error, /^cannot allocate all claims: request gpu wants 1, 3 selected \(3 in use/);
});

test('bad input exits 2 with a message', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dra-cli-'));
  fs.writeFileSync(path.join(dir, 'bad.yaml'), 'kind: ResourceSlice\nmetadata: {name: x}\nspec: {driver: d, pool: {name: p}, devices: [{name: a, capacity: {memory: {value: 10GB}}}]}\n');
  const bad = runCli(['--slices', path.join(dir, 'bad.yaml'), '--classes', classes, '--claims', classes]);
  assert.equal(bad.status, 2);
  assert.match(bad.err, /capacity\.memory: quantities must match/);
  assert.equal(runCli(['--slices', golden('gh200-x4.json')]).status, 2);
  assert.equal(runCli(['--bogus']).status, 2);
});
