#!/usr/bin/env node
// Evaluates kgpu's ResourceSlice ValidatingAdmissionPolicy offline, the way the API server applies
// it, against a table of admission requests: kgpu's service account with a token bound to a pod on
// node-a may create, update and delete node-a's slices of kgpu's drivers and nothing else; a token
// that names no node may write no slice; other users (the kubelet, other service accounts,
// administrators) are not matched. The CEL is run by cel-js (@marcbachmann/cel-js), a CEL
// implementation in JavaScript, not by the API server's cel-go: the expressions use only standard
// CEL (has, in, size, indexing, ?:), which both implement alike.
//
// What the API server does and this emulates: matchConditions first (all true, or the policy does
// not apply); then every validation; a validation that is false denies with its messageExpression
// (its message if that fails); one whose evaluation fails denies too (failurePolicy Fail, checked).
// `object` is null for DELETE, `oldObject` null for CREATE; userInfo.extra is left out of the
// request when the token has no extra (the API server converts it with omitempty).
//
// The service account and the drivers come from the DaemonSet in the same file (serviceAccountName,
// its namespace, KGPU_DRA_DRIVER and KGPU_DRA_VENDORS), so the policy is checked against what the
// pods really run as; --user / --drivers give them for a file without a DaemonSet.
// Each validation must be needed: with any one removed, some request of the table must be let
// through (else the table does not test it). --same-spec OTHER.yaml: the policy's and binding's
// spec must equal OTHER's (the static manifest and the chart stay one policy).
//
// Usage: node check-admission-policy.js [--user U] [--drivers a,b] [--same-spec OTHER.yaml] FILE.yaml
'use strict';
const fs = require('fs');
const YAML = require('yaml');

const NODE_EXTRA = 'authentication.kubernetes.io/node-name';
// A token with no extra at all: the request's userInfo has no `extra` field.
const NO_EXTRA = Symbol('no extra');
const KGPU_DRIVERS = { nvidia: 'gpu.nvidia.com', amd: 'gpu.amd.com', intel: 'gpu.intel.com' };

function load(file) {
  return YAML.parseAllDocuments(fs.readFileSync(file, 'utf8'))
    .map((d) => d.toJS())
    .filter((o) => o && o.kind && o.metadata);
}

// The service account and DRA drivers of the kgpu DaemonSet in `objects`.
function fromDaemonSet(objects) {
  const ds = objects.find((o) => o.kind === 'DaemonSet');
  if (!ds) return {};
  const pod = ds.spec.template.spec;
  const plugin = pod.containers.find((c) => Array.isArray(c.args) && c.args[0] === 'plugin');
  const env = (name) => ((plugin && plugin.env) || []).find((e) => e.name === name);
  const driver = env('KGPU_DRA_DRIVER') ? env('KGPU_DRA_DRIVER').value : KGPU_DRIVERS.nvidia;
  const vendors = env('KGPU_DRA_VENDORS') ? env('KGPU_DRA_VENDORS').value.split(',') : ['nvidia'];
  return {
    user: `system:serviceaccount:${ds.metadata.namespace}:${pod.serviceAccountName || 'default'}`,
    drivers: vendors.map((v) => (v === 'nvidia' ? driver : KGPU_DRIVERS[v])),
  };
}

function slice(node, driver, extraSpec) {
  const spec = { driver, pool: { name: node || 'cluster', generation: 1, resourceSliceCount: 1 }, devices: [] };
  if (node) spec.nodeName = node;
  return {
    apiVersion: 'resource.k8s.io/v1',
    kind: 'ResourceSlice',
    metadata: { name: `${node || 'cluster'}-${driver}-x7k2p`, ownerReferences: [] },
    spec: Object.assign(spec, extraSpec || {}),
  };
}

// The extras of a service-account token bound to a pod on `node` (what the kubelet mounts).
function podToken(node) {
  return {
    'authentication.kubernetes.io/credential-id': ['JTI=0b6c2a4e-5c1f-4c3e-9a55-6f1e2d3c4b5a'],
    [NODE_EXTRA]: [node],
    'authentication.kubernetes.io/node-uid': ['8f0e3a9c-1d2b-4c5e-8f7a-9b0c1d2e3f4a'],
    'authentication.kubernetes.io/pod-name': ['kgpu-7xq9z'],
    'authentication.kubernetes.io/pod-uid': ['3c2b1a09-8f7e-4d6c-b5a4-392817161514'],
  };
}

// The request table. allow: expected outcome; says: a text the denial message must contain.
function cases(user, drivers) {
  const own = drivers[0];
  const foreign = 'dra.example.com';
  const out = [];
  const add = (name, operation, { object = null, oldObject = null, username = user, extra = podToken('node-a') }, expect) => {
    const userInfo = { username, uid: 'f1e2d3c4-b5a6-4978-8695-a4b3c2d1e0f9', groups: ['system:serviceaccounts', 'system:authenticated'] };
    if (extra !== NO_EXTRA) userInfo.extra = extra;
    out.push({ name, request: { operation, userInfo }, object, oldObject, ...expect });
  };
  const mine = slice('node-a', own);
  const theirs = slice('node-b', own);
  // What kgpu itself does on node-a.
  add('create its node\'s slice', 'CREATE', { object: mine }, { allow: true });
  add('update its node\'s slice', 'UPDATE', { object: mine, oldObject: mine }, { allow: true });
  add('delete its node\'s slice', 'DELETE', { oldObject: mine }, { allow: true });
  for (const d of drivers) add(`create its node's ${d} slice`, 'CREATE', { object: slice('node-a', d) }, { allow: true });
  // Another node's slices, a slice moved between nodes, slices of no single node.
  add('create a slice of node-b', 'CREATE', { object: theirs }, { allow: false, says: 'may not write a ResourceSlice for node node-b' });
  add('create a slice of node-a2', 'CREATE', { object: slice('node-a2', own) }, { allow: false, says: 'for node node-a2' });
  add('update node-b\'s slice', 'UPDATE', { object: theirs, oldObject: theirs }, { allow: false, says: 'the ResourceSlice of node node-b' });
  add('take over node-b\'s slice', 'UPDATE', { object: mine, oldObject: theirs }, { allow: false, says: 'may not change or delete the ResourceSlice of node node-b' });
  add('move its slice to node-b', 'UPDATE', { object: theirs, oldObject: mine }, { allow: false, says: 'may not write a ResourceSlice for node node-b' });
  add('delete node-b\'s slice', 'DELETE', { oldObject: theirs }, { allow: false, says: 'may not change or delete the ResourceSlice of node node-b' });
  add('create an allNodes slice', 'CREATE', { object: slice(null, own, { allNodes: true }) }, { allow: false, says: 'for more than one node' });
  add('create a nodeSelector slice', 'CREATE',
    { object: slice(null, own, { nodeSelector: { nodeSelectorTerms: [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['node-a'] }] }] } }) },
    { allow: false, says: 'for more than one node' });
  add('delete an allNodes slice', 'DELETE', { oldObject: slice(null, own, { allNodes: true }) }, { allow: false, says: 'the ResourceSlice of more than one node' });
  // Other drivers' slices on its own node.
  add(`create a ${foreign} slice`, 'CREATE', { object: slice('node-a', foreign) }, { allow: false, says: `of driver ${foreign}` });
  add(`turn a ${foreign} slice into kgpu's`, 'UPDATE', { object: mine, oldObject: slice('node-a', foreign) }, { allow: false, says: `a ResourceSlice of driver ${foreign}` });
  add(`turn its slice into a ${foreign} one`, 'UPDATE', { object: slice('node-a', foreign), oldObject: mine }, { allow: false, says: `of driver ${foreign}` });
  add(`delete a ${foreign} slice`, 'DELETE', { oldObject: slice('node-a', foreign) }, { allow: false, says: `delete a ResourceSlice of driver ${foreign}` });
  for (const d of Object.values(KGPU_DRIVERS).filter((x) => !drivers.includes(x))) {
    add(`create a ${d} slice (vendor not enabled)`, 'CREATE', { object: slice('node-a', d) }, { allow: false, says: `of driver ${d}` });
  }
  // Tokens that name no node: no write at all, with one clear message.
  const noNode = { allow: false, says: `user extra ${NODE_EXTRA}`, only: true };
  add('create with a token without extra', 'CREATE', { object: mine, extra: NO_EXTRA }, noNode);
  add('update with a token without extra', 'UPDATE', { object: mine, oldObject: mine, extra: NO_EXTRA }, noNode);
  add('delete with a token without extra', 'DELETE', { oldObject: mine, extra: NO_EXTRA }, noNode);
  add('create with an unbound token (credential-id only)', 'CREATE',
    { object: mine, extra: { 'authentication.kubernetes.io/credential-id': ['JTI=1'] } }, noNode);
  add('create with an empty node-name extra', 'CREATE', { object: mine, extra: { [NODE_EXTRA]: [] } }, noNode);
  add('create with an empty extra', 'CREATE', { object: mine, extra: {} }, noNode);
  // Users the policy does not restrict: RBAC alone decides for them.
  add('the kubelet deletes node-b\'s slice', 'DELETE', { oldObject: theirs, username: 'system:node:node-a', extra: NO_EXTRA }, { allow: true, unmatched: true });
  add('an administrator creates node-b\'s slice', 'CREATE', { object: theirs, username: 'kubernetes-admin', extra: NO_EXTRA }, { allow: true, unmatched: true });
  const [, , ns, sa] = user.split(':');
  add('same account name, other namespace', 'CREATE', { object: theirs, username: `system:serviceaccount:${ns}-other:${sa}` }, { allow: true, unmatched: true });
  add('other account, same namespace', 'CREATE', { object: theirs, username: `system:serviceaccount:${ns}:${sa}-other` }, { allow: true, unmatched: true });
  return out;
}

async function main(argv) {
  const { Environment } = await import('@marcbachmann/cel-js');
  const env = new Environment({ unlistedVariablesAreDyn: true, homogeneousAggregateLiterals: false });
  const problems = [];
  const opts = {};
  const files = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--user') opts.user = argv[++i];
    else if (argv[i] === '--drivers') opts.drivers = argv[++i].split(',');
    else if (argv[i] === '--same-spec') opts.sameSpec = argv[++i];
    else files.push(argv[i]);
  }
  if (files.length !== 1) {
    console.error('usage: check-admission-policy.js [--user U] [--drivers a,b] [--same-spec OTHER.yaml] FILE.yaml');
    return 2;
  }
  const file = files[0];
  const objects = load(file);
  const policies = objects.filter((o) => o.kind === 'ValidatingAdmissionPolicy');
  const bindings = objects.filter((o) => o.kind === 'ValidatingAdmissionPolicyBinding');
  if (policies.length !== 1) {
    console.error(`${file}: expected one ValidatingAdmissionPolicy, found ${policies.length}`);
    return 1;
  }
  const policy = policies[0];
  const spec = policy.spec;
  const derived = fromDaemonSet(objects);
  const user = opts.user || derived.user;
  const drivers = opts.drivers || derived.drivers;
  if (!user || !drivers) {
    console.error(`${file}: no DaemonSet to take the service account and drivers from; pass --user and --drivers`);
    return 1;
  }

  // Structure: what the policy applies to, and that it denies.
  const where = `${file} ValidatingAdmissionPolicy/${policy.metadata.name}`;
  if (spec.failurePolicy !== 'Fail') problems.push(`${where}: failurePolicy must be Fail (an error must deny)`);
  const rules = (spec.matchConstraints || {}).resourceRules || [];
  const covers = (op) => rules.some((r) => (r.apiGroups || []).includes('resource.k8s.io') &&
    (r.resources || []).includes('resourceslices') && (r.apiVersions || []).includes('*') &&
    ((r.operations || []).includes(op) || (r.operations || []).includes('*')));
  for (const op of ['CREATE', 'UPDATE', 'DELETE']) {
    if (!covers(op)) problems.push(`${where}: does not match ${op} of resource.k8s.io resourceslices (every version)`);
  }
  const bound = bindings.filter((b) => b.spec && b.spec.policyName === policy.metadata.name);
  if (bound.length !== 1) problems.push(`${where}: expected one binding naming it, found ${bound.length}`);
  for (const b of bound) {
    if (!(b.spec.validationActions || []).includes('Deny')) problems.push(`${file} ${b.metadata.name}: validationActions lack Deny`);
    if (b.spec.matchResources || b.spec.paramRef) problems.push(`${file} ${b.metadata.name}: the binding must not narrow the policy`);
  }
  for (const v of spec.validations || []) {
    if (v.message && /[\r\n]/.test(v.message)) problems.push(`${where}: a message has a line break (the API server refuses it)`);
  }

  // Every expression must parse.
  const compiled = new Map();
  let unparsed = 0;
  const compile = (text, what) => {
    if (!compiled.has(text)) {
      try {
        compiled.set(text, env.parse(text));
      } catch (e) {
        problems.push(`${where}: ${what} does not parse: ${e.message.split('\n')[0]}`);
        compiled.set(text, null);
        unparsed++;
      }
    }
    return compiled.get(text);
  };
  (spec.matchConditions || []).forEach((m) => compile(m.expression, `matchCondition ${m.name}`));
  (spec.variables || []).forEach((v) => compile(v.expression, `variable ${v.name}`));
  (spec.validations || []).forEach((v, i) => {
    compile(v.expression, `validation ${i}`);
    if (v.messageExpression) compile(v.messageExpression, `validation ${i}'s messageExpression`);
  });
  if (unparsed) return report(problems);

  const run = (text, ctx) => compiled.get(text)(ctx);
  // The admission decision for one request under `s` (a policy spec).
  function admit(s, c) {
    if (!covers(c.request.operation)) return { matched: false, allowed: true, messages: [] };
    const ctx = { request: c.request, object: c.object, oldObject: c.oldObject };
    for (const m of s.matchConditions || []) {
      let r;
      try {
        r = run(m.expression, ctx);
      } catch (e) {
        return { matched: true, allowed: false, messages: [`matchCondition ${m.name} failed: ${e.message.split('\n')[0]}`] };
      }
      if (r !== true) return { matched: false, allowed: true, messages: [] };
    }
    // Variables are evaluated lazily by the API server; one that fails only fails what uses it.
    ctx.variables = {};
    for (const v of s.variables || []) {
      try {
        ctx.variables[v.name] = run(v.expression, ctx);
      } catch (e) {
        /* left unset: an expression reading it fails below */
      }
    }
    const messages = [];
    for (const v of s.validations || []) {
      let ok;
      try {
        ok = run(v.expression, ctx) === true;
      } catch (e) {
        messages.push(`expression failed (denied by failurePolicy Fail): ${e.message.split('\n')[0]}`);
        continue;
      }
      if (ok) continue;
      let message = v.message || `failed expression: ${v.expression}`;
      if (v.messageExpression) {
        try {
          message = String(run(v.messageExpression, ctx));
        } catch (e) {
          /* the API server falls back to message */
        }
      }
      messages.push(message);
    }
    return { matched: true, allowed: messages.length === 0, messages };
  }

  const table = cases(user, drivers);
  let failed = 0;
  for (const c of table) {
    const got = admit(spec, c);
    const bad = [];
    if (got.allowed !== c.allow) bad.push(`${got.allowed ? 'allowed' : 'denied'}, expected ${c.allow ? 'allowed' : 'denied'}`);
    if (c.unmatched && got.matched) bad.push('the policy applied to a user it must not restrict');
    if (c.says && !got.messages.some((m) => m.includes(c.says))) bad.push(`no message says "${c.says}"`);
    if (c.only && got.messages.length !== 1) bad.push(`expected one message, got ${got.messages.length}`);
    if (bad.length) {
      failed++;
      problems.push(`${where}: ${c.request.operation} "${c.name}": ${bad.join('; ')} (messages: ${JSON.stringify(got.messages)})`);
    }
  }
  // Each validation and the match condition must be needed: without it, the table lets something
  // through that it must not (or restricts someone it must not).
  const needed = [];
  (spec.validations || []).forEach((v, i) => {
    const weaker = { ...spec, validations: spec.validations.filter((_, j) => j !== i) };
    if (table.every((c) => admit(weaker, c).allowed === c.allow)) needed.push(`validation ${i} (${v.expression})`);
  });
  const unmatched = { ...spec, matchConditions: [] };
  if (table.every((c) => admit(unmatched, c).allowed === c.allow)) needed.push('the matchConditions');
  for (const n of needed) problems.push(`${where}: no request of the table needs ${n}: it is untested or useless`);

  if (opts.sameSpec) {
    const other = load(opts.sameSpec);
    for (const kind of ['ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding']) {
      const a = objects.find((o) => o.kind === kind);
      const b = other.find((o) => o.kind === kind);
      if (!b) problems.push(`${opts.sameSpec}: no ${kind}`);
      else if (JSON.stringify(a.spec) !== JSON.stringify(b.spec)) problems.push(`${file}: ${kind} spec differs from ${opts.sameSpec}'s`);
    }
  }
  console.log(`check-admission-policy: ${file}: ${user}, drivers ${drivers.join(', ')}: ` +
    `${table.length} requests, ${failed} wrong; ${(spec.validations || []).length} validations, ${needed.length} not needed`);
  return report(problems);
}

function report(problems) {
  for (const p of problems) console.error(p);
  return problems.length ? 1 : 0;
}

main(process.argv.slice(2)).then((code) => process.exit(code), (e) => {
  console.error(e.stack || String(e));
  process.exit(1);
});
