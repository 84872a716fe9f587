// The simulator's allocation rules, one test per rule of structured v0.34.0 (README.md names the
// Go function each follows). Slices are written here, small, so each test shows its rule.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { device, slice, deviceClass, CLASSES, request, claim, run, devicesOf } = require('./test-helpers.js');

const two = (opts = {}) => slice([device('gpu-0', opts), device('gpu-1', opts)]);

test('class selectors and request selectors must both match; devices are tried in slice order', async () => {
  const s = slice([
    device('mig-0', { type: 'mig', memory: '80Gi' }),
    device('gpu-0', { memory: '16Gi' }),
    device('gpu-1', { memory: '80Gi' }),
    device('gpu-2', { memory: '80Gi' }),
  ]);
  const out = await run([s], [claim('big', [request('gpu', { selectors: ["device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0"] })])]);
  assert.deepEqual(devicesOf(out[0]), ['gpu-1']);
  const none = await run([s], [claim('huge', [request('gpu', { selectors: ["device.capacity['gpu.nvidia.com'].memory.isGreaterThan(quantity('80Gi'))"] })])]);
  assert.match(none[0].error, /cannot allocate all claims: request gpu wants 1, 0 selected/);
});

test('ExactCount takes count different devices; more than there are fails', async () => {
  const out = await run([two()], [claim('c2', [request('gpus', { count: 2 })]), claim('c1', [request('gpu')])]);
  assert.deepEqual(devicesOf(out[0]), ['gpu-0', 'gpu-1']);
  assert.match(out[1].error, /1 in use|2 in use/);
  const three = await run([two()], [claim('c3', [request('gpus', { count: 3 })])]);
  assert.ok(three[0].error);
});

test('allocationMode All takes every matching device, needs at least one, and a complete pool', async () => {
  const s = slice([device('gpu-0'), device('mig-0', { type: 'mig' }), device('gpu-1')]);
  const out = await run([s], [claim('all', [request('gpus', { allocationMode: 'All' })])]);
  assert.deepEqual(devicesOf(out[0]), ['gpu-0', 'gpu-1']);
  const none = await run([s], [claim('all', [request('gpus', { allocationMode: 'All', selectors: ['false'] })])]);
  assert.ok(none[0].error);
  const partial = await run([slice([device('gpu-0')], { count: 2 })], [claim('all', [request('gpus', { allocationMode: 'All' })])]);
  assert.match(partial[0].error, /asks for all devices, but resource pool gpu.nvidia.com\/node-1 is currently being updated/);
});

test('firstAvailable: the first subrequest that can be satisfied is used, named request/subrequest', async () => {
  const s = slice([device('gpu-0', { memory: '40Gi' }), device('mig-0', { type: 'mig' })]);
  const c = claim('pick', [
    {
      name: 'gpu',
      firstAvailable: [
        { name: 'big', deviceClassName: 'gpu.nvidia.com', selectors: [{ cel: { expression: "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('80Gi')) >= 0" } }] },
        { name: 'mig', deviceClassName: 'mig.nvidia.com' },
        { name: 'small', deviceClassName: 'gpu.nvidia.com' },
      ],
    },
  ]);
  const out = await run([s], [c]);
  assert.deepEqual(out[0].allocation.devices.results.map((r) => [r.request, r.device]), [['gpu/mig', 'mig-0']]);
});

test('taints: an untolerated taint of any effect, None included (1.34), makes a device unallocatable', async () => {
  for (const effect of ['NoSchedule', 'NoExecute', 'None']) {
    const s = slice([device('gpu-0', { taints: [{ key: 'gpu.nvidia.com/xid', value: '79', effect }] }), device('gpu-1')]);
    const out = await run([s], [claim('c', [request('gpu')])]);
    assert.deepEqual(devicesOf(out[0]), ['gpu-1'], effect);
  }
  const tainted = slice([device('gpu-0', { taints: [{ key: 'gpu.nvidia.com/gpu-lost', effect: 'NoSchedule' }] })]);
  const refused = await run([tainted], [claim('c', [request('gpu')])]);
  assert.match(refused[0].error, /1 with an untolerated taint/);
  const tolerations = [
    [{ key: 'gpu.nvidia.com/gpu-lost', operator: 'Exists' }, true],
    [{ operator: 'Exists' }, true],
    [{ key: 'gpu.nvidia.com/gpu-lost', operator: 'Exists', effect: 'NoSchedule' }, true],
    [{ key: 'gpu.nvidia.com/gpu-lost', operator: 'Exists', effect: 'NoExecute' }, false],
    [{ key: 'gpu.nvidia.com/gpu-lost', value: '' }, true], // operator Equal by default, empty value
    [{ key: 'gpu.nvidia.com/gpu-lost', value: 'x' }, false],
    [{ key: 'other' , operator: 'Exists' }, false],
  ];
  for (const [t, ok] of tolerations) {
    const out = await run([tainted], [claim('c', [request('gpu', { tolerations: [t] })])]);
    assert.equal(!!out[0].allocation, ok, JSON.stringify(t));
  }
});

// A shareable device of issue 37's design: its own type, memory in 1Gi steps (default 1Gi) and
// multiprocessors with a default of 4.
function shareable(name, memory = '80Gi') {
  return device(name, {
    type: 'gpu-share',
    multi: true,
    capacity: {
      memory: { value: memory, requestPolicy: { default: '1Gi', validRange: { min: '1Gi', step: '1Gi' } } },
      multiprocessors: { value: '132', requestPolicy: { default: '4', validRange: { min: '1', step: '1' } } },
    },
  });
}
const share = (name, memory) => {
  const fields = { deviceClassName: 'gpu-share.kgpu.io' };
  if (memory) fields.capacity = { requests: { memory } };
  return claim(name, [request('gpu', fields)]);
};

test('allowMultipleAllocations: each allocation gets a fresh shareID and consumedCapacity; no request consumes the defaults', async () => {
  const s = slice([shareable('gpu-0'), device('gpu-1')]);
  const out = await run([s], [share('a'), share('b', '10Gi'), claim('whole', [request('gpu')])]);
  const [a, b, whole] = out.map((e) => e.allocation.devices.results[0]);
  assert.equal(a.device, 'gpu-0');
  assert.deepEqual(a.consumedCapacity, { memory: '1Gi', multiprocessors: '4' });
  assert.equal(b.device, 'gpu-0');
  assert.deepEqual(b.consumedCapacity, { memory: '10Gi', multiprocessors: '4' });
  assert.ok(a.shareID && b.shareID && a.shareID !== b.shareID);
  assert.equal(whole.device, 'gpu-1');
  assert.equal(whole.shareID, undefined);
  assert.equal(whole.consumedCapacity, undefined);
});

test('requestPolicy: a request is rounded up to min / the step / the next valid value; past max or the capacity it does not fit', async () => {
  const policyDevice = (policy, value = '80Gi') => slice([device('gpu-0', { type: 'gpu-share', multi: true, capacity: { memory: { value, requestPolicy: policy } } })]);
  const cases = [
    [{ default: '1Gi', validRange: { min: '1Gi', step: '1Gi' } }, '1536Mi', '2Gi'],
    [{ default: '1Gi', validRange: { min: '1Gi', step: '1Gi' } }, '100Mi', '1Gi'],
    [{ default: '1Gi', validRange: { min: '2Gi' } }, '2500Mi', '2500Mi'],
    [{ default: '1Gi', validRange: { min: '1Gi', max: '8Gi', step: '1Gi' } }, '9Gi', null],
    [{ default: '10Gi', validValues: ['10Gi', '20Gi', '40Gi'] }, '15Gi', '20Gi'],
    [{ default: '10Gi', validValues: ['10Gi', '20Gi', '40Gi'] }, '50Gi', null],
    [{ default: '1Gi', validRange: { min: '1Gi', step: '1Gi' } }, '81Gi', null],
  ];
  for (const [policy, asked, consumed] of cases) {
    const out = await run([policyDevice(policy)], [share('s', asked)]);
    if (consumed === null) assert.ok(out[0].error, `${asked} under ${JSON.stringify(policy)}`);
    else assert.equal(out[0].allocation.devices.results[0].consumedCapacity.memory, consumed, `${asked} under ${JSON.stringify(policy)}`);
  }
  // A capacity without a policy: a request takes what it asks, no request takes it all.
  const plain = slice([device('gpu-0', { type: 'gpu-share', multi: true, capacity: { memory: { value: '40Gi' } } })]);
  const out = await run([plain], [share('a', '10Gi'), share('b'), share('c', '30Gi')]);
  assert.equal(out[0].allocation.devices.results[0].consumedCapacity.memory, '10Gi');
  assert.ok(out[1].error, 'the whole 40Gi no longer fits');
  assert.equal(out[2].allocation.devices.results[0].consumedCapacity.memory, '30Gi');
});

test('a multi-allocatable device takes claims while capacity remains, also across already-allocated claims', async () => {
  const s = slice([shareable('gpu-0', '40Gi')]);
  const out = await run([s], [share('a', '16Gi'), share('b', '16Gi'), share('c', '16Gi'), share('d', '8Gi')]);
  assert.deepEqual(out.map((e) => !!e.allocation), [true, true, false, true]);
  // Shares given before (with consumedCapacity) count against the device too.
  const earlier = claim('earlier', [], {
    allocation: { devices: { results: [{ request: 'gpu', driver: 'gpu.nvidia.com', pool: 'node-1', device: 'gpu-0', shareID: 'x', consumedCapacity: { memory: '36Gi', multiprocessors: '4' } }] } },
  });
  const after = await run([s], [share('a', '8Gi'), share('b', '4Gi')], { allocated: [earlier] });
  assert.deepEqual(after.map((e) => !!e.allocation), [false, true]);
});

test('one claim may get the same multi-allocatable device for several devices (as the scheduler does)', async () => {
  const s = slice([shareable('gpu-0'), shareable('gpu-1')]);
  const out = await run([s], [claim('two', [request('gpus', { deviceClassName: 'gpu-share.kgpu.io', count: 2 })])]);
  assert.deepEqual(devicesOf(out[0]), ['gpu-0', 'gpu-0']);
});

test('a device without allowMultipleAllocations is exclusive; devices of allocated claims are not reused', async () => {
  const allocated = claim('old', [], {
    allocation: { devices: { results: [{ request: 'gpu', driver: 'gpu.nvidia.com', pool: 'node-1', device: 'gpu-0' }] } },
  });
  const out = await run([two()], [claim('a', [request('gpu')]), claim('b', [request('gpu')])], { allocated: [allocated] });
  assert.deepEqual(devicesOf(out[0]), ['gpu-1']);
  assert.match(out[1].error, /2 in use/);
  // Two requests of one claim get two different devices.
  const pair = await run([two()], [claim('pair', [request('a'), request('b')])]);
  assert.deepEqual(devicesOf(pair[0]), ['gpu-0', 'gpu-1']);
  // adminAccess results do not make a device allocated.
  const admin = claim('admin', [], {
    allocation: { devices: { results: [{ request: 'gpu', driver: 'gpu.nvidia.com', pool: 'node-1', device: 'gpu-0', adminAccess: true }] } },
  });
  const free = await run([two()], [claim('a', [request('gpu')])], { allocated: [admin] });
  assert.deepEqual(devicesOf(free[0]), ['gpu-0']);
});

test('matchAttribute: all devices share the value; the search backtracks to find such a set', async () => {
  const island = (i) => ({ 'kgpu.io/nvlinkIsland': { string: `island-${i}` } });
  const s = slice([
    device('gpu-0', { attrs: island(0) }),
    device('gpu-1', { attrs: island(1) }),
    device('gpu-2', { attrs: {} }),
    device('gpu-3', { attrs: island(1) }),
  ]);
  const c = (name) => claim(name, [request('gpus', { count: 2 })], { constraints: [{ requests: ['gpus'], matchAttribute: 'kgpu.io/nvlinkIsland' }] });
  const out = await run([s], [c('pair'), c('again')]);
  assert.deepEqual(devicesOf(out[0]), ['gpu-1', 'gpu-3']);
  assert.ok(out[1].error, 'gpu-0 has no partner, gpu-2 no island');
  // A name in the driver's domain matches the bare attribute; across two requests too.
  const byProduct = claim('p', [request('a'), request('b')], { constraints: [{ matchAttribute: 'gpu.nvidia.com/productName' }] });
  const products = slice([
    device('gpu-0', { attrs: { productName: { string: 'A100' } } }),
    device('gpu-1', { attrs: { productName: { string: 'H100' } } }),
    device('gpu-2', { attrs: { productName: { string: 'A100' } } }),
  ]);
  assert.deepEqual(devicesOf((await run([products], [byProduct]))[0]), ['gpu-0', 'gpu-2']);
});

test('shared counters: a device fits only while every counter it consumes has room', async () => {
  const mem = (n) => ({ counterSet: 'gpu-0', counters: { memory: { value: `${n}Gi` } } });
  const s = slice(
    [
      device('gpu-0-whole', { consumes: [mem(40)] }),
      device('gpu-0-mig-a', { type: 'mig', consumes: [mem(20)] }),
      device('gpu-0-mig-b', { type: 'mig', consumes: [mem(20)] }),
      device('gpu-0-mig-c', { type: 'mig', consumes: [mem(10)] }),
    ],
    { sharedCounters: [{ name: 'gpu-0', counters: { memory: { value: '40Gi' } } }] },
  );
  const mig = (name) => claim(name, [request('mig', { deviceClassName: 'mig.nvidia.com' })]);
  const out = await run([s], [mig('m1'), mig('m2'), mig('m3'), claim('whole', [request('gpu')])]);
  assert.deepEqual(out.slice(0, 2).map((e) => devicesOf(e)[0]), ['gpu-0-mig-a', 'gpu-0-mig-b']);
  assert.ok(out[2].error, 'the counter is used up');
  assert.ok(out[3].error, 'the whole GPU needs all 40Gi');
  // Within one claim too: two MIG devices of 20Gi fit, three do not.
  const within = await run([s], [claim('three', [request('mig', { deviceClassName: 'mig.nvidia.com', count: 3 })])]);
  assert.ok(within[0].error);
});

test('pools: only the newest generation counts; an incomplete pool is still used for ExactCount, as in Go', async () => {
  const old = slice([device('gpu-old')], { name: 's-old', generation: 1 });
  const neu = slice([device('gpu-new')], { name: 's-new', generation: 2 });
  assert.deepEqual(devicesOf((await run([old, neu], [claim('c', [request('gpu')])]))[0]), ['gpu-new']);
  assert.deepEqual(devicesOf((await run([neu, old], [claim('c', [request('gpu')])]))[0]), ['gpu-new']);
  const old2 = slice([device('gpu-old-a'), device('gpu-old-b')], { name: 's-old', generation: 1 });
  assert.match((await run([neu, old2], [claim('c', [request('gpus', { count: 2 })])]))[0].error, /cannot allocate all claims: request gpus wants 2, 1 selected/);
  // Two slices of one pool: devices of the first slice first.
  const a = slice([device('gpu-a')], { name: 's-a', count: 2 });
  const b = slice([device('gpu-b')], { name: 's-b', count: 2 });
  assert.deepEqual((await run([b, a], [claim('c', [request('gpu')]), claim('d', [request('gpu')])])).map((e) => devicesOf(e)[0]), ['gpu-b', 'gpu-a']);
  // 1.34's allocateDevice re-checks capacity at slice.devices[index within the request]: the
  // second device of a request, taken from a one-device slice, is out of range (Go panics; fixed in 1.35).
  assert.match((await run([b, a], [claim('c', [request('gpus', { count: 2 })])]))[0].error, /device index 1 out of range for slice s-a/);
  // One of two slices published: ExactCount still allocates from it (allocateOne checks only IsInvalid).
  assert.deepEqual(devicesOf((await run([a], [claim('c', [request('gpu')])]))[0]), ['gpu-a']);
  // Duplicate device names make the pool invalid: allocation fails with an error.
  const dup = slice([device('gpu-0'), device('gpu-0')]);
  assert.match((await run([dup], [claim('c', [request('gpu')])]))[0].error, /pool node-1 is invalid: duplicate device name gpu-0/);
  // Slices of another node are not used.
  const other = slice([device('gpu-x')], { node: 'node-2', pool: 'node-2' });
  assert.deepEqual(devicesOf((await run([other, two()], [claim('c', [request('gpu')])]))[0]), ['gpu-0']);
});

test('v1beta1 slices (devices[].basic) and v1beta1 claims allocate like v1', async () => {
  const beta = {
    apiVersion: 'resource.k8s.io/v1beta1',
    kind: 'ResourceSlice',
    metadata: { name: 'beta' },
    spec: {
      driver: 'gpu.nvidia.com',
      nodeName: 'node-1',
      pool: { name: 'node-1', generation: 1, resourceSliceCount: 1 },
      devices: [
        { name: 'gpu-0', basic: { attributes: { type: { string: 'gpu' } }, capacity: { memory: { value: '40Gi' } }, taints: [{ key: 'k', effect: 'NoSchedule' }] } },
        { name: 'gpu-1', basic: { attributes: { type: { string: 'gpu' } }, capacity: { memory: { value: '80Gi' } } } },
      ],
    },
  };
  const betaClaim = {
    apiVersion: 'resource.k8s.io/v1beta1',
    kind: 'ResourceClaimTemplate',
    metadata: { name: 't' },
    spec: { spec: { devices: { requests: [{ name: 'gpu', deviceClassName: 'gpu.nvidia.com', selectors: [{ cel: { expression: "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0" } }] }] } } },
  };
  assert.deepEqual(devicesOf((await run([beta], [betaClaim]))[0]), ['gpu-1']);
});

test('a selector that reads a missing attribute fails the allocation with an error, not a non-match', async () => {
  const s = slice([device('gpu-0'), device('gpu-1', { attrs: { productName: { string: 'H100' } } })]);
  const out = await run([s], [claim('c', [request('gpu', { selectors: ["device.attributes['gpu.nvidia.com'].productName == 'H100'"] })])]);
  assert.match(out[0].error, /claim default\/c: selector #0: CEL runtime error: No such key: productName/);
  // Guarded with `in`, it is a plain non-match.
  const guarded = await run([s], [claim('c', [request('gpu', { selectors: ["'productName' in device.attributes['gpu.nvidia.com'] && device.attributes['gpu.nvidia.com'].productName == 'H100'"] })])]);
  assert.deepEqual(devicesOf(guarded[0]), ['gpu-1']);
  // A class whose selector does not compile: an error naming the class.
  const bad = await run([s], [claim('c', [request('gpu', { deviceClassName: 'bad' })])], { classes: [deviceClass('bad', 'device.driver ==')] });
  assert.match(bad[0].error, /class bad: selector #0: CEL compile error/);
  // A missing class.
  const missing = await run([s], [claim('c', [request('gpu', { deviceClassName: 'nope' })])]);
  assert.match(missing[0].error, /could not retrieve device class nope/);
});

test('config: the class config for its requests, then the claim config of the requests it names', async () => {
  const opaque = (x) => ({ opaque: { driver: 'gpu.nvidia.com', parameters: { x } } });
  const classes = [deviceClass('gpu.nvidia.com', "device.attributes['gpu.nvidia.com'].type == 'gpu'", [opaque('class')])];
  const c = claim('c', [request('gpu')], { config: [Object.assign({ requests: ['gpu'] }, opaque('claim')), Object.assign({ requests: ['other'] }, opaque('not mine'))] });
  const out = await run([two()], [c], { classes });
  assert.deepEqual(out[0].allocation.devices.config, [
    Object.assign({ source: 'FromClass' }, opaque('class')),
    Object.assign({ source: 'FromClaim', requests: ['gpu'] }, opaque('claim')),
  ]);
  assert.deepEqual(out[0].allocation.nodeSelector, { nodeSelectorTerms: [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['node-1'] }] }] });
});

test('the kgpu classes keep MIG devices, shares and whole GPUs apart', async () => {
  const s = slice([shareable('gpu-0'), device('gpu-0-mig', { type: 'mig' }), device('gpu-1')]);
  const out = await run([s], [claim('g', [request('gpu')]), claim('m', [request('m', { deviceClassName: 'mig.nvidia.com' })]), share('s', '10Gi')]);
  assert.deepEqual(out.map((e) => devicesOf(e)[0]), ['gpu-1', 'gpu-0-mig', 'gpu-0']);
  assert.equal(CLASSES.length, 3);
});

// Issue 37, finding 1, as the new design publishes it: an 8-GPU node whose GPU 0 is for memory
// shares (type gpu-share) and GPUs 1-7 whole.
test('issue 37 design: whole-GPU claims get whole GPUs, shares only go to share claims', async () => {
  const node = slice([shareable('gpu-0')].concat([1, 2, 3, 4, 5, 6, 7].map((i) => device(`gpu-${i}`))));
  const one = (i) => claim(`one-${i}`, [request('gpu')]);
  const out = await run([node], [0, 1, 2, 3, 4, 5, 6, 7].map(one));
  const got = out.slice(0, 7).map((e) => e.allocation.devices.results[0]);
  assert.equal(new Set(got.map((r) => r.device)).size, 7, 'seven different GPUs');
  assert.ok(got.every((r) => r.device !== 'gpu-0' && r.shareID === undefined));
  assert.ok(out[7].error, 'no eighth whole GPU: GPU 0 is for shares');
  const pair = await run([node], [claim('pair', [request('gpus', { count: 2 })])]);
  const [a, b] = devicesOf(pair[0]);
  assert.notEqual(a, b);
  assert.ok(a !== 'gpu-0' && b !== 'gpu-0');
  const shares = await run([node], [share('s1', '10Gi'), share('s2', '10Gi')]);
  for (const e of shares) {
    const [r] = e.allocation.devices.results;
    assert.equal(r.device, 'gpu-0');
    assert.equal(r.consumedCapacity.memory, '10Gi');
    assert.ok(r.shareID);
  }
  assert.notEqual(shares[0].allocation.devices.results[0].shareID, shares[1].allocation.devices.results[0].shareID);
});

// Finding 1 as published before the design: a multi-allocatable `type: gpu` device takes a plain
// one-GPU claim as a share (default capacities), and a two-GPU claim twice: what the scheduler does.
test('issue 37 finding 1 (old shape): a shareable type-gpu device captures whole-GPU claims', async () => {
  const old = shareable('gpu-0');
  old.attributes.type = { string: 'gpu' };
  const node = slice([old, device('gpu-1')]);
  const out = await run([node], [claim('one', [request('gpu')]), claim('pair', [request('gpus', { count: 2 })])]);
  assert.deepEqual(out[0].allocation.devices.results[0].consumedCapacity, { memory: '1Gi', multiprocessors: '4' });
  assert.deepEqual(devicesOf(out[1]), ['gpu-0', 'gpu-0']);
});

// Finding 4: deploy/examples/mig-1g10gb.yaml must pick a 1g.10gb device even where a bigger MIG
// device (which also has >= 10Gi) comes first. A 1g.10gb has 9728Mi, less than 10Gi.
test('issue 37 finding 4: the mig-1g10gb example selects the 1g.10gb profile, not any MIG device with 10Gi', async () => {
  const path = require('path');
  const { loadObjects } = require('./objects.js');
  const example = loadObjects(path.join(__dirname, '../../../deploy/examples/mig-1g10gb.yaml')).find((o) => o.kind === 'ResourceClaimTemplate');
  const mig = (name, profile, memory) => device(name, { type: 'mig', memory, attrs: { profile: { string: profile } } });
  const h100 = slice([mig('gpu-0-mig-3g40gb', '3g.40gb', '40448Mi'), mig('gpu-0-mig-1g10gb', '1g.10gb', '9728Mi')]);
  const out = await run([h100], [example, example]);
  assert.deepEqual(devicesOf(out[0]), ['gpu-0-mig-1g10gb']);
  assert.ok(out[1].error, 'the 3g.40gb device is not a 1g.10gb');
});

test('capacity.requests on an exclusive device: a minimum; the device is taken whole, without a share', async () => {
  const s = slice([device('gpu-0', { memory: '40Gi' }), device('gpu-1', { memory: '16Gi' })]);
  const ask = (name, memory) => claim(name, [request('gpu', { capacity: { requests: { memory } } })]);
  const out = await run([s], [ask('a', '20Gi'), ask('b', '10Gi'), ask('c', '10Gi')]);
  const [a, b] = out.map((e) => e.allocation && e.allocation.devices.results[0]);
  assert.equal(a.device, 'gpu-0');
  assert.equal(b.device, 'gpu-1');
  assert.ok(a.shareID === undefined && a.consumedCapacity === undefined);
  assert.ok(out[2].error, 'both GPUs are taken whole');
  // A capacity the device does not publish excludes it.
  const other = await run([s], [claim('x', [request('gpu', { capacity: { requests: { 'kgpu.io/multiprocessors': '4' } } })])]);
  assert.match(other[0].error, /2 without the capacity/);
});

// allocateDevice (v0.34.x) re-checks capacity on slice.devices[r.deviceIndex], the index of the
// device within its request, not on the device chosen (v0.35 passes the device). So the first
// device of a request is re-checked against the slice's first device.
test('1.34: the capacity re-check looks at slice.devices[index within the request]', async () => {
  const ask = (name, memory) => claim(name, [request('gpu', { capacity: { requests: { memory } } })]);
  const small = slice([device('gpu-0', { memory: '16Gi' }), device('gpu-1', { memory: '40Gi' })]);
  assert.match((await run([small], [ask('a', '20Gi')]))[0].error, /cannot allocate all claims/, 'gpu-1 fits, but gpu-0 is checked');
  // Every GPU shareable: once GPU 0 is full, no share goes to GPU 1 either.
  const shares = slice([shareable('gpu-0', '40Gi'), shareable('gpu-1', '40Gi')]);
  const out = await run([shares], ['a', 'b', 'c'].map((n) => share(n, '16Gi')));
  assert.deepEqual(out.map((e) => (e.allocation ? e.allocation.devices.results[0].device : 'none')), ['gpu-0', 'gpu-0', 'none']);
});
