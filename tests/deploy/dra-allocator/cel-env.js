// Kubernetes' DRA CEL environment for device selectors, on cel-js (@marcbachmann/cel-js), as
// k8s.io/dynamic-resource-allocation cel/compile.go (v0.34.0) defines it for the scheduler:
//   device.driver                     string
//   device.allowMultipleAllocations   bool (DRAConsumableCapacity on; false when unset)
//   device.attributes[domain][id]     int / bool / string / Semver; a name without a domain lives
//                                     in the driver's domain (parseQualifiedName)
//   device.capacity[domain][id]       Quantity (the capacity's value)
// Looking up a domain that the device does not have gives an empty map (newStringInterfaceMapWithDefault),
// so `'x' in device.attributes['other.io']` is false; looking up a name that is missing is an
// evaluation error ("no such key"), which the allocator turns into a failed allocation, not a
// non-match (selectorsMatch returns the error).
// On top of standard CEL and cel-js's string extensions (lowerAscii, upperAscii, ...): the
// Kubernetes quantity library (k8s.io/apiserver/pkg/cel/library/quantity.go) and semver library
// (semver.go). Not provided: the cost limit, ext.Sets, the url/ip/cidr/regex/lists/format
// libraries (see README.md).
'use strict';

const { Quantity } = require('./quantity.js');
const { Semver } = require('./semver.js');

// The outer attributes / capacity map: unknown domains read as an empty map, as the Go mapper's
// Find does. cel-js reads a Map with .get() for both indexing and `in`, so `'other.io' in
// device.attributes` is true here where cel-go answers false (listed in README.md).
function mapWithDefault(map) {
  const empty = new Map();
  return new Proxy(map, {
    get(target, prop) {
      if (prop === 'get') return (key) => (target.has(key) ? target.get(key) : empty);
      const v = Reflect.get(target, prop, target);
      return typeof v === 'function' && prop !== 'constructor' ? v.bind(target) : v;
    },
  });
}

function parseQualifiedName(name, defaultDomain) {
  const sep = name.indexOf('/');
  return sep < 0 ? [defaultDomain, name] : [name.slice(0, sep), name.slice(sep + 1)];
}

// getAttributeValue: exactly one of int, bool, string, version.
function attributeValue(name, attr) {
  if (attr && attr.int !== undefined && attr.int !== null) return BigInt(attr.int);
  if (attr && typeof attr.bool === 'boolean') return attr.bool;
  if (attr && typeof attr.string === 'string') return attr.string;
  if (attr && typeof attr.version === 'string') {
    try {
      return Semver.parse(attr.version);
    } catch (e) {
      throw new Error(`attribute ${name}: parse semantic version: ${e.message}`);
    }
  }
  throw new Error(`attribute ${name}: unsupported attribute value`);
}

// The `device` variable for one device (v1 shape: attributes {name: {int|bool|string|version}},
// capacity {name: {value}}).
function deviceVariable(driver, device) {
  const attributes = new Map();
  for (const [name, attr] of Object.entries(device.attributes || {})) {
    const [domain, id] = parseQualifiedName(name, driver);
    if (!attributes.has(domain)) attributes.set(domain, new Map());
    attributes.get(domain).set(id, attributeValue(name, attr));
  }
  const capacity = new Map();
  for (const [name, cap] of Object.entries(device.capacity || {})) {
    const [domain, id] = parseQualifiedName(name, driver);
    if (!capacity.has(domain)) capacity.set(domain, new Map());
    capacity.get(domain).set(id, cap.value instanceof Quantity ? cap.value : Quantity.parse(String(cap.value)));
  }
  return new DRADevice(driver, device.allowMultipleAllocations === true, mapWithDefault(attributes), mapWithDefault(capacity));
}

class DRADevice {
  constructor(driver, allowMultipleAllocations, attributes, capacity) {
    this.driver = driver;
    this.allowMultipleAllocations = allowMultipleAllocations;
    this.attributes = attributes;
    this.capacity = capacity;
  }
}

function register(env) {
  const fn = (sig, handler) => env.registerFunction(sig, handler);
  const q = (text) => Quantity.parse(text);
  env.registerType('Quantity', Quantity).registerType('Semver', Semver);
  fn('quantity(string): Quantity', q);
  fn('isQuantity(string): bool', (s) => Quantity.isValid(s));
  fn('Quantity.compareTo(Quantity): int', (a, b) => BigInt(a.cmp(b)));
  fn('Quantity.isGreaterThan(Quantity): bool', (a, b) => a.cmp(b) === 1);
  fn('Quantity.isLessThan(Quantity): bool', (a, b) => a.cmp(b) === -1);
  fn('Quantity.add(Quantity): Quantity', (a, b) => a.add(b));
  fn('Quantity.add(int): Quantity', (a, b) => a.add(Quantity.fromInt(b, 'DecimalExponent')));
  fn('Quantity.sub(Quantity): Quantity', (a, b) => a.sub(b));
  fn('Quantity.sub(int): Quantity', (a, b) => a.sub(Quantity.fromInt(b, 'DecimalExponent')));
  fn('Quantity.asApproximateFloat(): double', (a) => a.asApproximateFloat());
  fn('Quantity.isInteger(): bool', (a) => a.asInt64() !== null);
  fn('Quantity.asInteger(): int', (a) => {
    const v = a.asInt64();
    if (v === null) throw new Error('cannot convert value to integer');
    return v;
  });
  // Declared as a plain overload in quantity.go, so both sign(q) and q.sign() resolve in cel-go.
  fn('sign(Quantity): int', (a) => BigInt(a.sign()));
  fn('Quantity.sign(): int', (a) => BigInt(a.sign()));
  env.registerOperator('Quantity == Quantity', (a, b) => a.cmp(b) === 0);

  fn('semver(string): Semver', (s) => Semver.parse(s, false));
  fn('semver(string, bool): Semver', (s, n) => Semver.parse(s, n));
  fn('isSemver(string): bool', (s) => Semver.isValid(s, false));
  fn('isSemver(string, bool): bool', (s, n) => Semver.isValid(s, n));
  fn('Semver.major(): int', (v) => v.majorV);
  fn('Semver.minor(): int', (v) => v.minorV);
  fn('Semver.patch(): int', (v) => v.patchV);
  fn('Semver.compareTo(Semver): int', (a, b) => BigInt(a.compare(b)));
  fn('Semver.isGreaterThan(Semver): bool', (a, b) => a.compare(b) === 1);
  fn('Semver.isLessThan(Semver): bool', (a, b) => a.compare(b) === -1);
  env.registerOperator('Semver == Semver', (a, b) => a.compare(b) === 0);
  // kubernetes.DRADevice of compile.go: unknown fields and ill-typed uses of driver or
  // allowMultipleAllocations fail at compile time, as they do in cel-go.
  env.registerType('DRADevice', {
    ctor: DRADevice,
    fields: {
      driver: 'string',
      allowMultipleAllocations: 'bool',
      attributes: 'map<string, map<string, dyn>>',
      capacity: 'map<string, map<string, Quantity>>',
    },
  });
  env.registerVariable('device', 'DRADevice');
  return env;
}

// Loads cel-js (an ES module) and returns compile(expression) -> { error } | { matches(driver,
// device) }; matches returns a boolean or throws the evaluation error.
async function loadDeviceCel() {
  const { Environment } = await import('@marcbachmann/cel-js');
  const env = register(new Environment({ homogeneousAggregateLiterals: false, enableOptionalTypes: true }));
  const cache = new Map();
  function compile(expression) {
    if (cache.has(expression)) return cache.get(expression);
    let result;
    try {
      const program = env.parse(expression);
      const checked = program.check();
      if (!checked.valid) throw checked.error;
      if (checked.type !== 'bool' && checked.type !== 'dyn') {
        throw new Error(`must evaluate to bool or the unknown type, not ${checked.type}`);
      }
      result = {
        matches(driver, device) {
          const value = program({ device: deviceVariable(driver, device) });
          if (typeof value !== 'boolean') {
            throw new Error(`CEL result of type ${typeof value} could not be converted to bool`);
          }
          return value;
        },
      };
    } catch (e) {
      result = { error: `compilation failed: ${e.message}` };
    }
    cache.set(expression, result);
    return result;
  }
  return { compile };
}

module.exports = { loadDeviceCel, deviceVariable };
