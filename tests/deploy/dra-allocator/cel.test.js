// The DRA CEL environment (cel/compile.go v0.34.0) and the Kubernetes quantity and semver
// libraries as selectors see them, plus the Quantity arithmetic the allocator uses.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { Quantity } = require('./quantity.js');
const { Semver } = require('./semver.js');
const { cel } = require('./test-helpers.js');

const DEV = {
  allowMultipleAllocations: true,
  attributes: {
    type: { string: 'gpu' },
    index: { int: 3 },
    mig: { bool: false },
    productName: { string: 'NVIDIA H100 80GB HBM3' },
    driverVersion: { version: '550.90.7' },
    cudaComputeCapability: { version: '9.0.0' },
    'kgpu.io/nvlinkIsland': { string: 'island-1' },
    'resource.kubernetes.io/pciBusID': { string: '0000:18:00.0' },
  },
  capacity: { memory: { value: '81559Mi' }, 'kgpu.io/multiprocessors': { value: '132' } },
};

async function evalOn(expression, device = DEV, driver = 'gpu.nvidia.com') {
  const { compile } = await cel();
  const c = compile(expression);
  if (c.error) return { compileError: c.error };
  try {
    return { value: c.matches(driver, device) };
  } catch (e) {
    return { error: e.message };
  }
}

test('device variable: driver, domains, unqualified names in the driver domain, typed values', async () => {
  const yes = [
    "device.driver == 'gpu.nvidia.com'",
    "device.attributes['gpu.nvidia.com'].type == 'gpu'",
    "device.attributes['gpu.nvidia.com'].index == 3",
    "device.attributes['gpu.nvidia.com'].mig == false",
    "device.attributes['kgpu.io'].nvlinkIsland == 'island-1'",
    "device.attributes['resource.kubernetes.io'].pciBusID.startsWith('0000:18')",
    "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('79Gi')) >= 0",
    "device.capacity['kgpu.io'].multiprocessors == quantity('132')",
    'device.allowMultipleAllocations',
    "'type' in device.attributes['gpu.nvidia.com']",
    "!('type' in device.attributes['other.example.com'])",
    "device.attributes['gpu.nvidia.com'].index == 'three' || true",
    "cel.bind(g, device.attributes['gpu.nvidia.com'], g.type == 'gpu' && g.index > 2)",
  ];
  for (const e of yes) assert.deepEqual(await evalOn(e), { value: true }, e);
  assert.deepEqual(await evalOn("device.attributes['gpu.nvidia.com'].index == 'three'"), { value: false });
  const unset = Object.assign({}, DEV, { allowMultipleAllocations: undefined });
  assert.deepEqual(await evalOn('device.allowMultipleAllocations', unset), { value: false });
});

test('missing attributes, capacities and domains are evaluation errors', async () => {
  for (const e of [
    "device.attributes['gpu.nvidia.com'].uuid == 'x'",
    "device.attributes['other.example.com'].type == 'gpu'",
    "device.capacity['gpu.nvidia.com'].cores.compareTo(quantity('1')) > 0",
    "device.attributes['gpu.nvidia.com'].index < 'x'",
  ]) {
    const r = await evalOn(e);
    assert.ok(r.error, `${e}: ${JSON.stringify(r)}`);
  }
  // Short-circuit as in CEL: a false left side hides the error on the right.
  assert.deepEqual(await evalOn("device.driver == 'other' && device.attributes['gpu.nvidia.com'].uuid == 'x'"), { value: false });
});

test('compile errors: syntax, and a result that is not bool', async () => {
  assert.ok((await evalOn('device.driver ==')).compileError);
  assert.ok((await evalOn("device.attributes['gpu.nvidia.com'].index + 1 == 'x' + 1")).compileError);
  assert.ok((await evalOn('1 + 1')).compileError);
  assert.ok((await evalOn('unknownFunction(1)')).compileError);
  // The device variable is typed (kubernetes.DRADevice), so these fail to compile, as in cel-go.
  for (const e of ['device.foo == 1', 'device.driver == 1', "device.allowMultipleAllocations == 'x'", "device.capacity['gpu.nvidia.com'].memory > quantity('1')"]) {
    assert.ok((await evalOn(e)).compileError, e);
  }
});

test('quantity library: quantity, isQuantity and the Quantity methods', async () => {
  const yes = [
    "quantity('1Gi') == quantity('1024Mi')",
    "quantity('1Gi').isGreaterThan(quantity('1G'))",
    "quantity('1G').isLessThan(quantity('1Gi'))",
    "quantity('500m').compareTo(quantity('0.5')) == 0",
    "quantity('1Gi').add(quantity('1Gi')) == quantity('2Gi')",
    "quantity('1k').add(1) == quantity('1001')",
    "quantity('2Gi').sub(quantity('1Gi')).asInteger() == 1073741824",
    "quantity('1k').sub(1).asInteger() == 999",
    "quantity('1.5').asApproximateFloat() == 1.5",
    "quantity('1500m').isInteger() == false && quantity('2').isInteger()",
    "quantity('-3').sign() == -1 && sign(quantity('0')) == 0",
    "isQuantity('81559Mi') && !isQuantity('80GB') && !isQuantity('')",
  ];
  for (const e of yes) assert.deepEqual(await evalOn(e), { value: true }, e);
  assert.ok((await evalOn("quantity('80GB') == quantity('1')")).error);
  assert.ok((await evalOn("quantity('1500m').asInteger() == 1")).error);
});

test('semver library: semver, isSemver and the Semver methods', async () => {
  const yes = [
    "device.attributes['gpu.nvidia.com'].driverVersion.isGreaterThan(semver('550.54.15'))",
    "device.attributes['gpu.nvidia.com'].driverVersion.major() == 550",
    "device.attributes['gpu.nvidia.com'].driverVersion.minor() == 90",
    "device.attributes['gpu.nvidia.com'].driverVersion.patch() == 7",
    "device.attributes['gpu.nvidia.com'].cudaComputeCapability.compareTo(semver('9.0.0')) == 0",
    "device.attributes['gpu.nvidia.com'].cudaComputeCapability == semver('9.0.0')",
    "device.attributes['gpu.nvidia.com'].cudaComputeCapability.isLessThan(semver('10.0.0'))",
    "semver('1.0.0-alpha').isLessThan(semver('1.0.0'))",
    "semver('1.0.0-alpha.2').isLessThan(semver('1.0.0-alpha.10'))",
    "semver('1.0.0+build').compareTo(semver('1.0.0')) == 0",
    "isSemver('1.2.3') && !isSemver('1.2') && !isSemver('01.2.3') && !isSemver('v1.2.3')",
    "isSemver('v1.2', true) && semver('v1.02', true) == semver('1.2.0')",
  ];
  for (const e of yes) assert.deepEqual(await evalOn(e), { value: true }, e);
  assert.ok((await evalOn("semver('1.2') == semver('1.2.0')")).error);
});

test('string extensions used in selectors', async () => {
  const yes = [
    "device.attributes['gpu.nvidia.com'].productName.lowerAscii().contains('h100')",
    "device.attributes['gpu.nvidia.com'].productName.upperAscii().endsWith('HBM3')",
    "device.attributes['gpu.nvidia.com'].productName.startsWith('NVIDIA')",
    "device.attributes['gpu.nvidia.com'].productName.matches('^NVIDIA (A|H)100')",
    "device.attributes['gpu.nvidia.com'].productName.split(' ').size() == 4",
  ];
  for (const e of yes) assert.deepEqual(await evalOn(e), { value: true }, e);
});

test('an attribute with a bad version fails evaluation', async () => {
  const bad = { attributes: { v: { version: '1.2' } }, capacity: {} };
  assert.match((await evalOn("device.driver == 'gpu.nvidia.com'", bad)).error, /attribute v: parse semantic version/);
});

test('Quantity: parsing, canonical form, Value rounding, exact compare', () => {
  const canon = [
    ['40Gi', '40Gi'], ['1536Mi', '1536Mi'], ['1.5Gi', '1536Mi'], ['1024Mi', '1Gi'], ['1536', '1536'],
    ['0.5', '500m'], ['1000', '1k'], ['12e6', '12e6'], ['100m', '100m'], ['0', '0'], ['-2Ki', '-2Ki'],
  ];
  for (const [text, want] of canon) assert.equal(Quantity.parse(text).toString(), want, text);
  assert.equal(Quantity.parse('1500m').value(), 2n);
  assert.equal(Quantity.parse('1Gi').value(), 1073741824n);
  assert.equal(Quantity.parse('1Gi').cmp(Quantity.parse('1073741824')), 0);
  assert.equal(Quantity.parse('1G').cmp(Quantity.parse('1Gi')), -1);
  for (const bad of ['', 'Gi', '1GB', '1.2.3', 'abc', '1 Gi']) assert.equal(Quantity.isValid(bad), false, bad);
  assert.equal(Quantity.fromInt(2147483648n, 'BinarySI').toString(), '2Gi');
});

test('Semver: strict parsing and precedence', () => {
  assert.equal(Semver.parse('550.54.15').compare(Semver.parse('550.90.7')), -1);
  assert.equal(Semver.parse('1.0.0-rc.1').compare(Semver.parse('1.0.0-beta.11')), 1);
  assert.equal(Semver.parse('1.0.0-alpha').compare(Semver.parse('1.0.0-alpha.1')), -1);
  assert.equal(Semver.parse('1.0.0-1').compare(Semver.parse('1.0.0-a')), -1);
  assert.throws(() => Semver.parse('1.2.03'));
  assert.throws(() => Semver.parse('1.2.3-01'));
});
