// Semantic versions as the Kubernetes CEL library (k8s.io/apiserver/pkg/cel/library/semver.go,
// on github.com/blang/semver/v4) parses and orders them: strict MAJOR.MINOR.PATCH with optional
// -prerelease and +build (no leading zeros, no "v"); precedence per semver 2.0.0 (build ignored).
// `normalize` is semver(string, true): a leading "v", missing minor/patch and leading zeros are
// accepted and fixed up first, as the library's normalizeVersion does.
'use strict';

const NUM = /^(0|[1-9][0-9]*)$/;
const IDENT = /^[0-9A-Za-z-]+$/;

class Semver {
  constructor(major, minor, patch, pre, build) {
    this.majorV = major;
    this.minorV = minor;
    this.patchV = patch;
    this.pre = pre; // array of strings / BigInt
    this.build = build;
  }

  static parse(text, normalize) {
    const v = tryParse(text, normalize);
    if (typeof v === 'string') throw new Error(v);
    return v;
  }

  static isValid(text, normalize) {
    return typeof tryParse(text, normalize) !== 'string';
  }

  compare(o) {
    for (const k of ['majorV', 'minorV', 'patchV']) {
      if (this[k] !== o[k]) return this[k] < o[k] ? -1 : 1;
    }
    if (this.pre.length === 0 && o.pre.length === 0) return 0;
    if (this.pre.length === 0) return 1;
    if (o.pre.length === 0) return -1;
    for (let i = 0; i < Math.min(this.pre.length, o.pre.length); i++) {
      const a = this.pre[i];
      const b = o.pre[i];
      if (a === b) continue;
      const an = typeof a === 'bigint';
      const bn = typeof b === 'bigint';
      if (an && bn) return a < b ? -1 : 1;
      if (an) return -1;
      if (bn) return 1;
      return a < b ? -1 : 1;
    }
    return this.pre.length === o.pre.length ? 0 : this.pre.length < o.pre.length ? -1 : 1;
  }

  toString() {
    let s = `${this.majorV}.${this.minorV}.${this.patchV}`;
    if (this.pre.length) s += `-${this.pre.join('.')}`;
    if (this.build.length) s += `+${this.build.join('.')}`;
    return s;
  }
}

function normalizeVersion(text) {
  let s = text.startsWith('v') ? text.slice(1) : text;
  const cut = s.search(/[-+]/);
  const core = cut < 0 ? s : s.slice(0, cut);
  const rest = cut < 0 ? '' : s.slice(cut);
  const parts = core.split('.');
  while (parts.length < 3) parts.push('0');
  return parts.map((p) => (/^[0-9]+$/.test(p) ? String(BigInt(p)) : p)).join('.') + rest;
}

// A Semver, or a string saying why `text` is not one.
function tryParse(text, normalize) {
  if (typeof text !== 'string' || text === '') return 'Version string empty';
  const s = normalize ? normalizeVersion(text) : text;
  let core = s;
  let build = [];
  let pre = [];
  const plus = core.indexOf('+');
  if (plus >= 0) {
    build = core.slice(plus + 1).split('.');
    core = core.slice(0, plus);
    if (build.some((b) => !IDENT.test(b))) return `Invalid build metadata in ${text}`;
  }
  const dash = core.indexOf('-');
  if (dash >= 0) {
    const preText = core.slice(dash + 1).split('.');
    core = core.slice(0, dash);
    for (const p of preText) {
      if (!IDENT.test(p)) return `Invalid prerelease identifier in ${text}`;
      if (/^[0-9]+$/.test(p)) {
        if (!NUM.test(p)) return `Numeric prerelease identifier with leading zero in ${text}`;
        pre.push(BigInt(p));
      } else {
        pre.push(p);
      }
    }
  }
  const parts = core.split('.');
  if (parts.length !== 3) return `No Major.Minor.Patch elements found in ${text}`;
  if (!parts.every((p) => NUM.test(p))) return `Invalid Major.Minor.Patch in ${text}`;
  const [major, minor, patch] = parts.map((p) => BigInt(p));
  return new Semver(major, minor, patch, pre, build);
}

module.exports = { Semver };
