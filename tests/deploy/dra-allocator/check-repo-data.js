// What kgpu's own data promises, under the scheduler's rules (allocator.js): for every fleet in
// tests/fixtures/golden/dra (its v1 and its v1beta1 slices), with the DeviceClasses of
// deploy/static/kgpu-dra.yaml, each claim in deploy/examples/*.yaml and our NVIDIA-quickstart-shaped
// claims (quickstart-claims.yaml) get what their names and comments say, or nothing where the
// fleet has no such device. Expectations are predicates on the chosen devices, computed from the
// fleet's own devices, never device names copied from output.
//
// Memory shares follow issue 37's design: a GPU published for shares is a `type: gpu-share`
// device (class gpu-share.kgpu.io), never `type: gpu`; a multi-allocatable `type: gpu` device fails
// the check (NVIDIA's class would give whole-GPU claims shares of it: issue 37's finding 1).
// Run: node --test tests/deploy/dra-allocator/check-repo-data.js   (scripts/validate-deploy.sh dra-allocation)
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const path = require('path');
const { loadObjects, normalizeSlice, sortInputs } = require('./objects.js');
const { Quantity } = require('./quantity.js');
const { allocateInOrder, sequentialShareIDs } = require('./allocate.js');
const { cel } = require('./test-helpers.js');

// KGPU_REPO_ROOT: check another checkout's data (e.g. a candidate change) with this checker.
const root = process.env.KGPU_REPO_ROOT || path.resolve(__dirname, '../../..');
const goldenDir = path.join(root, 'tests/fixtures/golden/dra');
const examplesDir = path.join(root, 'deploy/examples');
const classes = sortInputs(loadObjects(path.join(root, 'deploy/static/kgpu-dra.yaml'))).classes;

const str = (d, name) => (d.attributes[name] || {}).string;
const memory = (d) => (d.capacity.memory ? d.capacity.memory.value : Quantity.fromInt(0));
const GI = (n) => Quantity.parse(`${n}Gi`);

// Claims the examples tolerate no device taint, so a tainted device is never theirs.
function fleetDevices(slices) {
  return slices.flatMap((s) => s.devices.filter((d) => d.taints.length === 0));
}
const isWhole = (d) => str(d, 'type') === 'gpu' && !d.allowMultipleAllocations;
const isShareable = (d) => str(d, 'type') === 'gpu-share' && d.allowMultipleAllocations;
const oldShareShape = (devices) => devices.some((d) => str(d, 'type') === 'gpu' && d.allowMultipleAllocations);

function fleets() {
  const out = [];
  for (const file of fs.readdirSync(goldenDir).filter((f) => f.endsWith('.json')).sort()) {
    const golden = JSON.parse(fs.readFileSync(path.join(goldenDir, file), 'utf8'));
    for (const version of ['v1', 'v1beta1']) {
      const slices = (golden[version] || []).map(normalizeSlice);
      if (slices.length) out.push({ name: `${path.basename(file, '.json')} (${version})`, slices, devices: fleetDevices(slices) });
    }
  }
  return out;
}

function examples() {
  const out = new Map();
  for (const file of fs.readdirSync(examplesDir).filter((f) => f.endsWith('.yaml')).sort()) {
    for (const c of sortInputs(loadObjects(path.join(examplesDir, file))).claims) out.set(c.name, c);
  }
  return out;
}

const quickstart = sortInputs(loadObjects(path.join(__dirname, 'quickstart-claims.yaml'))).claims;
const qs = (ns) => quickstart.find((c) => c.namespace === ns);

// Allocates `claim` `times` times in a row (pods with their own claim each, from a template).
async function allocateRepeatedly(fleet, claim, times) {
  const { compile } = await cel();
  return allocateInOrder({
    slices: fleet.slices,
    classes,
    claims: Array(times).fill(claim),
    allocated: [],
    node: { name: fleet.slices[0].nodeName },
    compile,
    newShareID: sequentialShareIDs(),
  });
}

function resultDevices(fleet, entry) {
  assert.ok(entry.allocation, `expected an allocation, got: ${entry.error}`);
  return entry.allocation.devices.results.map((r) => {
    const d = fleet.slices.flatMap((s) => s.devices).find((x) => x.name === r.device);
    assert.ok(d, `allocated device ${r.device} is not in the fleet`);
    return { result: r, device: d };
  });
}

// `candidates` whole GPUs, one per claim: claims 1..n each get a different one, whole; n+1 gets none.
async function expectOneWholeEach(fleet, claim, candidates) {
  const out = await allocateRepeatedly(fleet, claim, candidates.length + 1);
  const seen = new Set();
  for (const entry of out.slice(0, candidates.length)) {
    const [{ result, device }, ...more] = resultDevices(fleet, entry);
    assert.equal(more.length, 0, 'one device per claim');
    assert.ok(candidates.includes(device), `${device.name} (type ${str(device, 'type')}) is not one of the whole GPUs ${candidates.map((d) => d.name)}`);
    assert.equal(result.shareID, undefined, `${device.name} was given as a share (shareID ${result.shareID}), not whole`);
    assert.equal(result.consumedCapacity, undefined);
    assert.ok(!seen.has(device.name), `${device.name} given twice`);
    seen.add(device.name);
  }
  assert.ok(out[candidates.length].error, `claim ${candidates.length + 1} got ${JSON.stringify(out[candidates.length].allocation)} with only ${candidates.length} whole GPUs`);
}

const all = fleets();
const ex = examples();

// Every example is checked: a new one needs an entry here.
const EXPECT = {
  // One whole GPU with >= 40Gi each; never a share.
  'gpu-40gi': (fleet) => expectOneWholeEach(fleet, ex.get('gpu-40gi'), fleet.devices.filter((d) => isWhole(d) && memory(d).cmp(GI(40)) >= 0)),
  // Two different whole GPUs of one NVLink island per claim; as many claims as there are pairs.
  'two-gpus-nvlink': async (fleet) => {
    const islands = new Map();
    for (const d of fleet.devices.filter(isWhole)) {
      const island = str(d, 'kgpu.io/nvlinkIsland');
      if (island !== undefined) islands.set(island, (islands.get(island) || 0) + 1);
    }
    const pairs = [...islands.values()].reduce((n, k) => n + Math.floor(k / 2), 0);
    const out = await allocateRepeatedly(fleet, ex.get('two-gpus-nvlink'), pairs + 1);
    const used = new Set();
    for (const entry of out.slice(0, pairs)) {
      const got = resultDevices(fleet, entry);
      assert.equal(got.length, 2);
      const [a, b] = got;
      assert.notEqual(a.device.name, b.device.name, `the same device twice: ${a.device.name}`);
      for (const { result, device } of got) {
        assert.ok(isWhole(device), `${device.name} is not a whole GPU`);
        assert.equal(result.shareID, undefined, `${device.name} given as a share`);
        assert.ok(!used.has(device.name), `${device.name} given to two claims`);
        used.add(device.name);
      }
      assert.equal(str(a.device, 'kgpu.io/nvlinkIsland'), str(b.device, 'kgpu.io/nvlinkIsland'));
    }
    assert.ok(out[pairs].error, `claim ${pairs + 1} got devices with only ${pairs} pairs on one island`);
  },
  // Only MIG devices of profile 1g.10gb; none where the fleet has none.
  'mig-1g10gb': (fleet) => expectOneWholeEach(fleet, ex.get('mig-1g10gb'), fleet.devices.filter((d) => str(d, 'type') === 'mig' && str(d, 'profile') === '1g.10gb')),
  // Only MIG devices of profile 3g.40gb (static ones here; a dynamic GPU's placements in
  // tests/e2e/dra_dynamic_mig_e2e_test.cpp); none where the fleet has none.
  'mig-3g40gb': (fleet) => expectOneWholeEach(fleet, ex.get('mig-3g40gb'), fleet.devices.filter((d) => str(d, 'type') === 'mig' && str(d, 'profile') === '3g.40gb')),
  // One whole GPU, allocated once, with the claim's opaque config for its request.
  'shared-gpu': async (fleet) => {
    const whole = fleet.devices.filter(isWhole);
    const [entry] = await allocateRepeatedly(fleet, ex.get('shared-gpu'), 1);
    if (whole.length === 0) return assert.ok(entry.error);
    const got = resultDevices(fleet, entry);
    assert.equal(got.length, 1);
    assert.ok(isWhole(got[0].device) && got[0].result.shareID === undefined);
    const cfg = entry.allocation.devices.config || [];
    assert.ok(cfg.some((c) => c.source === 'FromClaim' && c.requests.includes('gpu') && c.opaque.driver === 'gpu.nvidia.com'), JSON.stringify(cfg));
  },
  // A 10Gi share of a shareable GPU, with a shareID; two such claims share it; never a whole GPU.
  'gpu-memory-10gi': async (fleet) => {
    assert.ok(!oldShareShape(fleet.devices), `${fleet.name} publishes a shareable GPU as type gpu: NVIDIA's class would hand whole-GPU claims shares of it`);
    const shareable = fleet.devices.filter(isShareable);
    const claim = ex.get('gpu-memory-10gi');
    const out = await allocateRepeatedly(fleet, claim, 2);
    if (shareable.length === 0) return out.forEach((e) => assert.ok(e.error, `a share claim got ${JSON.stringify(e.allocation)} on a fleet without shareable GPUs`));
    const got = out.map((e) => resultDevices(fleet, e));
    for (const [{ result, device }, ...more] of got) {
      assert.equal(more.length, 0);
      assert.ok(isShareable(device), `${device.name} is not a shareable GPU`);
      assert.ok(result.shareID, 'a share has a shareID');
      assert.equal(result.consumedCapacity.memory, '10Gi');
    }
    assert.equal(got[0][0].device.name, got[1][0].device.name, 'two 10Gi shares fit on one GPU');
    assert.notEqual(got[0][0].result.shareID, got[1][0].result.shareID);
    // Shares go on until the memory is used up, never past it.
    const fits = shareable.reduce((n, d) => n + Number(memory(d).value() / GI(10).value()), 0);
    const many = await allocateRepeatedly(fleet, claim, fits + 1);
    assert.equal(many.filter((e) => e.allocation).length, fits, `${fits} shares of 10Gi fit`);
  },
};

test('every deploy/examples claim has expectations here', () => {
  assert.deepEqual([...ex.keys()].filter((n) => !EXPECT[n]), []);
});

for (const fleet of all) {
  test(`${fleet.name}: examples`, async (t) => {
    for (const name of ex.keys()) await t.test(name, (st) => EXPECT[name](fleet, st));
  });

  test(`${fleet.name}: NVIDIA quickstart-shaped claims`, async (t) => {
    const whole = fleet.devices.filter(isWhole);
    // gpu-test1: two pods, a claim each from the template: two different whole GPUs (while there are).
    await t.test('gpu-test1', () => expectOneWholeEach(fleet, qs('gpu-test1'), whole));
    // gpu-test2: one claim for two containers is allocated once: one whole GPU.
    await t.test('gpu-test2', async () => {
      const [entry] = await allocateRepeatedly(fleet, qs('gpu-test2'), 1);
      if (whole.length === 0) return assert.ok(entry.error);
      const got = resultDevices(fleet, entry);
      assert.equal(got.length, 1);
      assert.ok(isWhole(got[0].device) && !got[0].result.shareID);
    });
    // gpu-test8-like: two different whole GPUs in one claim.
    await t.test('gpu-test8', async () => {
      const [entry] = await allocateRepeatedly(fleet, qs('gpu-test8'), 1);
      if (whole.length < 2) return assert.ok(entry.error);
      const got = resultDevices(fleet, entry);
      assert.equal(got.length, 2);
      assert.notEqual(got[0].device.name, got[1].device.name, `the same device twice: ${got[0].device.name}`);
      for (const g of got) assert.ok(isWhole(g.device) && !g.result.shareID, `${g.device.name} not whole`);
    });
  });
}
