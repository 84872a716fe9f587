// Kubernetes resource quantities (k8s.io/apimachinery/pkg/api/resource) as the allocator and the
// CEL library need them: parse, exact compare, add/sub, Value() (rounded up), AsInt64, and the
// canonical string the API server would serialize. Values are held exactly as a BigInt count of
// nano-units (10^-9), the finest precision a Quantity keeps; a parsed value with more digits is
// rounded up to it, as ParseQuantity rounds.
'use strict';

const NANO = 1000000000n;
const BINARY = { Ki: 1n, Mi: 2n, Gi: 3n, Ti: 4n, Pi: 5n, Ei: 6n };
const DECIMAL = { n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
const DECIMAL_SUFFIX = Object.fromEntries(Object.entries(DECIMAL).map(([s, e]) => [e, s]));
const INT64_MAX = (1n << 63n) - 1n;
const INT64_MIN = -(1n << 63n);

class Quantity {
  // nano: BigInt value in units of 10^-9; format: 'BinarySI' | 'DecimalSI' | 'DecimalExponent'.
  constructor(nano, format) {
    this.nano = nano;
    this.format = format;
  }

  static parse(text) {
    const q = tryParse(text);
    if (!q) throw new Error(`quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$': ${JSON.stringify(text)}`);
    return q;
  }

  static isValid(text) {
    return tryParse(text) !== null;
  }

  static fromInt(n, format) {
    return new Quantity(BigInt(n) * NANO, format || 'DecimalSI');
  }

  cmp(other) {
    return this.nano < other.nano ? -1 : this.nano > other.nano ? 1 : 0;
  }

  add(other) {
    return new Quantity(this.nano + other.nano, this.format);
  }

  sub(other) {
    return new Quantity(this.nano - other.nano, this.format);
  }

  sign() {
    return this.nano < 0n ? -1 : this.nano > 0n ? 1 : 0;
  }

  isZero() {
    return this.nano === 0n;
  }

  // Quantity.Value(): the integer value, rounded up (away from zero, as apimachinery does).
  value() {
    const whole = this.nano / NANO;
    const rest = this.nano % NANO;
    if (rest === 0n) return whole;
    return this.nano > 0n ? whole + 1n : whole - 1n;
  }

  // Quantity.AsInt64(): the value when it is a whole number within int64, else null.
  asInt64() {
    if (this.nano % NANO !== 0n) return null;
    const v = this.nano / NANO;
    return v > INT64_MAX || v < INT64_MIN ? null : v;
  }

  asApproximateFloat() {
    return Number(this.nano) / 1e9;
  }

  // The canonical form (Quantity.String()), which is how the API server writes a quantity back.
  toString() {
    const n = this.nano;
    const neg = n < 0n;
    const abs = neg ? -n : n;
    const sign = neg ? '-' : '';
    if (this.format === 'BinarySI' && abs >= 1024n * NANO && abs % NANO === 0n) {
      let v = abs / NANO;
      let exp = 0;
      while (exp < 6 && v % 1024n === 0n) {
        v /= 1024n;
        exp++;
      }
      const suffix = exp === 0 ? '' : Object.keys(BINARY).find((s) => BINARY[s] === BigInt(exp));
      return `${sign}${v}${suffix}`;
    }
    // Decimal: the largest exponent (a multiple of 3) that keeps the mantissa whole.
    let e = -9;
    let mant = abs;
    while (mant !== 0n && mant % 1000n === 0n && e < 18) {
      mant /= 1000n;
      e += 3;
    }
    if (mant === 0n) return '0';
    if (this.format === 'DecimalExponent') return `${sign}${mant}${e === 0 ? '' : `e${e}`}`;
    return `${sign}${mant}${DECIMAL_SUFFIX[e]}`;
  }

  toJSON() {
    return this.toString();
  }
}

function tryParse(text) {
  if (typeof text === 'number' && Number.isFinite(text)) text = String(text);
  if (typeof text !== 'string') return null;
  const m = /^([+-]?)([0-9]*)(?:\.([0-9]*))?(.*)$/.exec(text);
  if (!m || (m[2] === '' && (m[3] === undefined || m[3] === ''))) return null;
  const [, signText, whole, frac = '', suffix] = m;
  let format;
  let pow10 = 0n; // value = digits * 10^pow10 * 1024^pow1024
  let pow1024 = 0n;
  if (suffix in BINARY) {
    format = 'BinarySI';
    pow1024 = BINARY[suffix];
  } else if (suffix in DECIMAL) {
    format = 'DecimalSI';
    pow10 = BigInt(DECIMAL[suffix]);
  } else if (/^[eE][-+]?[0-9]+$/.test(suffix)) {
    format = 'DecimalExponent';
    pow10 = BigInt(suffix.slice(1));
  } else {
    return null;
  }
  // digits * 10^(pow10 - frac.length + 9) * 1024^pow1024 nano-units, rounded up.
  let num = BigInt((whole || '0') + frac) * 1024n ** pow1024;
  let exp = pow10 - BigInt(frac.length) + 9n;
  let nano;
  if (exp >= 0n) {
    nano = num * 10n ** exp;
  } else {
    const div = 10n ** -exp;
    nano = num / div + (num % div === 0n ? 0n : 1n);
  }
  return new Quantity(signText === '-' ? -nano : nano, format);
}

module.exports = { Quantity };
