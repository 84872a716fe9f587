#!/usr/bin/env node
// Validates Kubernetes manifests offline: every document against the Kubernetes OpenAPI schema of
// its apiVersion/kind (the validators the `kubernetes-models` npm package generates from the
// upstream OpenAPI spec), then kgpu's own deployment rules, which the schema cannot express.
// kubernetes-models 5 (Kubernetes 1.34+: it has resource.k8s.io/v1 for the DRA objects) ships ES
// modules only, so the models are loaded with import(). It has no resource.k8s.io/v1beta1 or
// v1beta2: DeviceClasses and claims of those versions are checked in their v1 form plus their own
// version's request rules.
//
// Usage: node validate-manifests.js FILE...     (exit 0: all valid; 1: problems, one per line)
//
// Known limit: the Kubernetes schemas allow unknown fields (the API server only warns about them),
// so a misspelled optional field passes the schema; the rules below cover the fields kgpu relies on.
'use strict';
const fs = require('fs');
const path = require('path');
const YAML = require('yaml');

const problems = [];
const report = (where, msg) => problems.push(`${where}: ${msg}`);

async function modelFor(apiVersion, kind) {
  // "v1" -> kubernetes-models/v1/Kind, "apps/v1" -> kubernetes-models/apps/v1/Kind
  if (typeof apiVersion !== 'string' || typeof kind !== 'string' || !/^[A-Za-z]+$/.test(kind)) return null;
  if (!/^([a-z0-9.-]+\/)?v[0-9a-z]+$/.test(apiVersion)) return null;
  const modulePath = `kubernetes-models/${apiVersion}/${kind}`;
  try {
    return (await import(modulePath))[kind] || null;
  } catch (e) {
    return null;
  }
}

async function schemaCheck(where, doc) {
  // kubernetes-models 5 ships resource.k8s.io/v1 only: the DRA objects of the older versions are
  // checked in their v1 form (v1beta1/v1beta2 -> v1 is a lossless move of fields, as the API
  // server converts them), after the rules of their own version (betaClaimRules).
  const beta = BETA_DRA_KINDS.has(doc.kind) && /^resource\.k8s\.io\/v1beta[12]$/.test(doc.apiVersion);
  const Model = await modelFor(beta ? 'resource.k8s.io/v1' : doc.apiVersion, doc.kind);
  if (!Model) {
    report(where, `unknown apiVersion/kind ${doc.apiVersion}/${doc.kind}`);
    return;
  }
  try {
    new Model(beta ? toV1(doc) : doc).validate();
  } catch (e) {
    report(where, `schema${beta ? ' (in its resource.k8s.io/v1 form)' : ''}: ${e.message}`);
  }
}

// The DRA kinds whose v1beta1/v1beta2 forms are checked against the v1 schema.
const BETA_DRA_KINDS = new Set(['DeviceClass', 'ResourceClaim', 'ResourceClaimTemplate']);
// The fields of a resource.k8s.io/v1beta1 device request that v1beta2 and v1 put under `exactly`.
const V1BETA1_EXACT_FIELDS = ['deviceClassName', 'selectors', 'allocationMode', 'count', 'adminAccess', 'tolerations', 'capacity'];

function claimDevices(doc) {
  const spec = doc.spec || {};
  if (doc.kind === 'ResourceClaim') return spec.devices;
  if (doc.kind === 'ResourceClaimTemplate') return (spec.spec || {}).devices;
  return undefined;
}

// A DRA object of v1beta1 or v1beta2 in its resource.k8s.io/v1 form (a copy).
function toV1(doc) {
  const v1 = JSON.parse(JSON.stringify(doc));
  const fromV1beta1 = doc.apiVersion === 'resource.k8s.io/v1beta1';
  v1.apiVersion = 'resource.k8s.io/v1';
  const devices = claimDevices(v1);
  if (fromV1beta1 && devices && Array.isArray(devices.requests)) {
    devices.requests = devices.requests.map((r) => {
      if (!r || typeof r !== 'object') return r;
      const moved = V1BETA1_EXACT_FIELDS.filter((f) => f in r);
      if (!moved.length) return r;
      const out = { ...r, exactly: { ...(r.exactly || {}) } };
      for (const f of moved) {
        out.exactly[f] = r[f];
        delete out[f];
      }
      return out;
    });
  }
  return v1;
}

// resource.k8s.io/v1beta1 device requests (Kubernetes 1.32/1.33), as the API server checks them:
// deviceClassName, selectors, count... sit on the request itself (v1beta2 and v1 nest them under
// `exactly`, which v1beta1 does not have), and a request has a deviceClassName or firstAvailable
// (firstAvailable: 1.33+), not both.
function betaClaimRules(where, doc) {
  const devices = claimDevices(doc);
  if (!devices || doc.apiVersion !== 'resource.k8s.io/v1beta1') return;
  for (const r of devices.requests || []) {
    const rw = `${where} request ${r.name}`;
    if ('exactly' in r) report(rw, 'exactly is resource.k8s.io/v1beta2 and v1; in v1beta1 deviceClassName/selectors/count sit on the request');
    if (!!r.deviceClassName === !!r.firstAvailable) report(rw, 'needs exactly one of deviceClassName and firstAvailable (resource.k8s.io/v1beta1)');
  }
}

// spec.extendedResourceName of a DeviceClass (KEP-5004, Kubernetes 1.34+): the schema says only
// "string"; the API server wants an extended resource name, which these rules check as it does: a
// domain-prefixed name outside kubernetes.io, not starting with "requests.", that is a label key
// once "requests." is put in front. kgpu renders it on resource.k8s.io/v1 DeviceClasses only
// (1.32/1.33 serve v1beta1/v1beta2, which have no such field there).
function extendedResourceNameProblem(name) {
  if (typeof name !== 'string') return 'is not a string';
  if (!name.includes('/')) return 'is not domain-prefixed (e.g. nvidia.com/gpu)';
  if (name.includes('kubernetes.io/')) return 'is in the kubernetes.io domain';
  if (name.startsWith('requests.')) return 'starts with "requests."';
  const parts = `requests.${name}`.split('/');
  if (parts.length !== 2) return 'has more than one "/"';
  const dns = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
  if (parts[0].length > 253 || !dns.test(parts[0])) return 'has a domain that is not a lower-case DNS subdomain';
  if (parts[1].length > 63 || !/^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/.test(parts[1])) return 'has a name part that is not a label name';
  return null;
}

function deviceClassRules(where, doc) {
  const spec = doc.spec || {};
  if (spec.extendedResourceName === undefined) return;
  const problem = extendedResourceNameProblem(spec.extendedResourceName);
  if (problem) report(where, `extendedResourceName ${spec.extendedResourceName} is not an extended resource name: it ${problem}`);
  if (doc.apiVersion !== 'resource.k8s.io/v1') {
    report(where, `extendedResourceName in ${doc.apiVersion}: kgpu sets it on resource.k8s.io/v1 DeviceClasses only (Kubernetes 1.34+)`);
  }
}

// Rules for pod templates that the schema cannot check: references must resolve, and the
// privilege model kgpu promises (no escalation, capabilities dropped unless privileged on purpose).
function podRules(where, spec) {
  const volumes = new Map((spec.volumes || []).map((v) => [v.name, v]));
  if (volumes.size !== (spec.volumes || []).length) report(where, 'duplicate volume names');
  const mounted = new Set();
  for (const c of [...(spec.initContainers || []), ...(spec.containers || [])]) {
    const cw = `${where} container ${c.name}`;
    for (const m of c.volumeMounts || []) {
      if (!volumes.has(m.name)) report(cw, `volumeMount ${m.name} has no volume`);
      mounted.add(m.name);
    }
    const paths = (c.volumeMounts || []).map((m) => m.mountPath);
    if (new Set(paths).size !== paths.length) report(cw, 'two volumeMounts share a mountPath');
    const names = (c.env || []).map((e) => e.name);
    const dup = names.find((n, i) => names.indexOf(n) !== i);
    if (dup) report(cw, `env ${dup} set twice`);
    for (const probe of [c.livenessProbe, c.readinessProbe]) {
      const port = probe && probe.httpGet && probe.httpGet.port;
      if (typeof port === 'string' && !(c.ports || []).some((p) => p.name === port)) {
        report(cw, `probe port ${port} is not a named container port`);
      }
    }
    const sc = c.securityContext || {};
    if (!sc.privileged) {
      if (sc.allowPrivilegeEscalation !== false) report(cw, 'allowPrivilegeEscalation must be false');
      const drop = ((sc.capabilities || {}).drop || []);
      if (!drop.includes('ALL')) report(cw, 'capabilities.drop must include ALL');
    }
    // The kgpu daemon containers: `kgpu plugin`, and `kgpu mps-daemon` next to it for MPS; or,
    // with no device plugin (the chart's devicePlugin.enabled: false), `kgpu labels --daemon` alone.
    const labeller = Array.isArray(c.args) && c.args[0] === 'labels';
    if (labeller) {
      if (!c.args.includes('--daemon')) report(cw, 'a labels container must run "labels --daemon"');
      if (!(c.env || []).some((e) => e.name === 'GFD_OUTPUT_FILE')) report(cw, 'a labels container needs GFD_OUTPUT_FILE');
    } else if (!Array.isArray(c.args) || !['plugin', 'mps-daemon'].includes(c.args[0])) {
      report(cw, 'args must start with "plugin", "mps-daemon" or "labels"');
    }
  }
  const labelsOnly = (spec.containers || []).every((c) => Array.isArray(c.args) && c.args[0] === 'labels');
  mpsRules(where, spec, volumes);
  for (const name of volumes.keys()) {
    if (!mounted.has(name)) report(where, `volume ${name} is never mounted`);
  }
  const hostPaths = (spec.volumes || []).filter((v) => v.hostPath).map((v) => v.hostPath.path);
  if (labelsOnly) {
    // The labeller serves nothing to the kubelet: its only host folders are NFD's and /sys.
    if (hostPaths.includes('/var/lib/kubelet/device-plugins')) report(where, 'a labels-only pod mounts the device-plugins folder');
  } else if (!hostPaths.includes('/var/lib/kubelet/device-plugins')) {
    report(where, 'the kubelet device-plugins folder is not mounted');
  }
  const tolerates = (spec.tolerations || []).some((t) => t.key === 'nvidia.com/gpu' && t.operator === 'Exists');
  if (!tolerates) report(where, 'no toleration for nvidia.com/gpu');
}

const envValue = (c, name) => {
  const e = (c.env || []).find((x) => x.name === name);
  return e === undefined ? undefined : JSON.stringify(e.value !== undefined ? e.value : e.valueFrom);
};
// The environment that decides which config `kgpu plugin` and `kgpu mps-daemon` load and what they
// plan: both must see the same values, or they disagree on the MPS resources and their paths.
const CONFIG_ENV = [
  'NODE_NAME', 'CONFIG_FILE', 'GFD_CONFIG_FILE', 'KGPU_CONFIG_DIR', 'KGPU_CONFIG_DEFAULT',
  'KGPU_NODE_CONFIG_LABEL', 'MPS_ROOT', 'MIG_STRATEGY', 'FAIL_ON_INIT_ERROR', 'DEVICE_ID_STRATEGY',
  'NVIDIA_DRIVER_ROOT', 'CONTAINER_DRIVER_ROOT', 'NVIDIA_DEV_ROOT', 'DEVICE_DISCOVERY_STRATEGY',
  'KGPU_BACKENDS', 'KGPU_SYSFS_ROOT', 'KGPU_PROC_ROOT', 'KGPU_DRA', 'KGPU_DRA_DRIVER', 'KGPU_DRA_GPUS',
  'KGPU_DRA_VENDORS', 'KGPU_DEVICE_PLUGIN',
];

// MPS: the plugin advertises an MPS resource only while `kgpu mps-daemon` keeps its readiness
// marker under MPS_ROOT, and MPS_ROOT is a host path (the mounts kgpu hands to the kubelet and
// CDI are host paths). So a pod with MPS_ROOT runs mps-daemon, every container with MPS_ROOT
// mounts that host folder at the same path, and mps-daemon loads the plugin's config.
function mpsRules(where, spec, volumes) {
  const containers = spec.containers || [];
  const plugin = containers.find((c) => Array.isArray(c.args) && c.args[0] === 'plugin');
  const daemons = containers.filter((c) => Array.isArray(c.args) && c.args[0] === 'mps-daemon');
  if (containers.some((c) => envValue(c, 'MPS_ROOT') !== undefined) && daemons.length === 0) {
    report(where, 'MPS_ROOT is set but no container runs "mps-daemon" (MPS resources would be withheld)');
  }
  for (const c of containers) {
    const cw = `${where} container ${c.name}`;
    const root = (c.env || []).find((e) => e.name === 'MPS_ROOT');
    if (!root) {
      if (daemons.includes(c)) report(cw, 'runs "mps-daemon" without MPS_ROOT');
      continue;
    }
    const atHostPath = (c.volumeMounts || []).some((m) => {
      const v = volumes.get(m.name);
      return v && v.hostPath && v.hostPath.path === root.value && m.mountPath === root.value;
    });
    if (!atHostPath) report(cw, `MPS_ROOT ${root.value} is not a host folder mounted at the same path`);
  }
  for (const d of daemons) {
    const dw = `${where} container ${d.name}`;
    if (!plugin) {
      report(dw, 'runs "mps-daemon" but no container runs "plugin"');
      continue;
    }
    for (const name of CONFIG_ENV) {
      if (envValue(d, name) !== envValue(plugin, name)) {
        report(dw, `env ${name} differs from the plugin container's (${envValue(d, name)} vs ${envValue(plugin, name)})`);
      }
    }
    for (const m of plugin.volumeMounts || []) {
      if (!['available-configs', 'driver-root'].includes(m.name)) continue;
      if (!(d.volumeMounts || []).some((x) => x.name === m.name && x.mountPath === m.mountPath)) {
        report(dw, `does not mount ${m.name} at ${m.mountPath} like the plugin container`);
      }
    }
    if (!(d.volumeMounts || []).some((m) => m.mountPath === '/dev/shm')) {
      report(dw, 'has no /dev/shm mount (MPS servers share it with their clients)');
    }
  }
}

function daemonSetRules(where, doc) {
  const spec = doc.spec || {};
  const selector = ((spec.selector || {}).matchLabels) || {};
  const labels = (((spec.template || {}).metadata || {}).labels) || {};
  for (const [k, v] of Object.entries(selector)) {
    if (labels[k] !== v) report(where, `selector ${k}=${v} does not match the pod template labels`);
  }
  if (!doc.metadata.namespace) report(where, 'no namespace');
  const pod = (spec.template || {}).spec || {};
  if (pod.priorityClassName !== 'system-node-critical') report(where, 'priorityClassName is not system-node-critical');
  if (pod.shareProcessNamespace) report(where, 'shareProcessNamespace is not wanted (kgpu switches configs itself)');
  podRules(where, pod);
}

// resource.k8s.io/v1 device requests, checked as the API server does where the schema cannot say it:
// each request is either `exactly` or `firstAvailable` (a v1beta1-style request with
// deviceClassName at the top level passes the schema, whose objects allow unknown fields, but the
// API server rejects it), and a constraint's matchAttribute is a fully qualified attribute name.
function deviceClaimRules(where, devices) {
  if (!devices) return;
  const names = new Set();
  for (const r of devices.requests || []) {
    const rw = `${where} request ${r.name}`;
    if (names.has(r.name)) report(rw, 'duplicate request name');
    names.add(r.name);
    if (!!r.exactly === !!r.firstAvailable) report(rw, 'needs exactly one of exactly and firstAvailable');
    if ('deviceClassName' in r || 'selectors' in r || 'count' in r) {
      report(rw, 'deviceClassName/selectors/count belong under exactly (resource.k8s.io/v1)');
    }
  }
  for (const c of devices.constraints || []) {
    if (c.matchAttribute !== undefined && !/^[a-z0-9.-]+\/[A-Za-z0-9_]+$/.test(c.matchAttribute)) {
      report(where, `constraint matchAttribute ${c.matchAttribute} is not a fully qualified attribute name (domain/name)`);
    }
    for (const name of c.requests || []) {
      if (!names.has(name)) report(where, `constraint names request ${name}, which the claim does not have`);
    }
  }
}

// A ValidatingAdmissionPolicyBinding does nothing unless its policy exists, and a policy does
// nothing without a binding: each must have the other in the same file.
function admissionRules(file, docs) {
  const policies = new Set(docs.filter((d) => d.kind === 'ValidatingAdmissionPolicy').map((d) => d.metadata.name));
  const bound = new Set();
  for (const b of docs.filter((d) => d.kind === 'ValidatingAdmissionPolicyBinding')) {
    const name = (b.spec || {}).policyName;
    bound.add(name);
    if (!policies.has(name)) report(`${path.basename(file)} ValidatingAdmissionPolicyBinding/${b.metadata.name}`, `policyName ${name} is not a policy of this file`);
    if (!((b.spec || {}).validationActions || []).length) report(`${path.basename(file)} ValidatingAdmissionPolicyBinding/${b.metadata.name}`, 'no validationActions');
  }
  for (const name of policies) {
    if (!bound.has(name)) report(`${path.basename(file)} ValidatingAdmissionPolicy/${name}`, 'no binding names it (it would never apply)');
  }
}

async function main(files) {
  let count = 0;
  const seen = new Set();
  for (const file of files) {
    let docs;
    try {
      docs = YAML.parseAllDocuments(fs.readFileSync(file, 'utf8'), { uniqueKeys: true });
    } catch (e) {
      report(file, `cannot read: ${e.message}`);
      continue;
    }
    const admission = [];
    for (const [i, d] of docs.entries()) {
      const where = `${path.basename(file)}#${i}`;
      if (d.errors.length) {
        d.errors.forEach((e) => report(where, `YAML: ${e.message}`));
        continue;
      }
      const doc = d.toJS();
      if (doc === null || doc === undefined) continue;  // an empty document (e.g. a template that rendered nothing)
      count++;
      if (typeof doc !== 'object' || !doc.metadata || !doc.metadata.name) {
        report(where, 'not a Kubernetes object with metadata.name');
        continue;
      }
      const id = `${file}|${doc.apiVersion}|${doc.kind}|${doc.metadata.namespace || ''}|${doc.metadata.name}`;
      if (seen.has(id)) report(where, `duplicate ${doc.kind} ${doc.metadata.name}`);
      seen.add(id);
      await schemaCheck(`${where} ${doc.kind}/${doc.metadata.name}`, doc);
      if (doc.kind === 'DaemonSet') daemonSetRules(`${where} DaemonSet/${doc.metadata.name}`, doc);
      if (doc.kind === 'ValidatingAdmissionPolicy' || doc.kind === 'ValidatingAdmissionPolicyBinding') admission.push(doc);
      if (/^resource\.k8s\.io\/v1(beta[12])?$/.test(doc.apiVersion)) {
        const ow = `${where} ${doc.kind}/${doc.metadata.name}`;
        betaClaimRules(ow, doc);
        const devices = claimDevices(toV1(doc));
        if (devices) deviceClaimRules(ow, devices);
        if (doc.kind === 'DeviceClass') deviceClassRules(ow, doc);
      }
    }
    admissionRules(file, admission);
  }
  if (count === 0) report('input', 'no Kubernetes objects found');
  for (const p of problems) console.error(p);
  console.log(`validate-manifests: ${count} objects in ${files.length} files, ${problems.length} problems`);
  return problems.length === 0 ? 0 : 1;
}

if (process.argv.length < 3) {
  console.error('usage: validate-manifests.js FILE...');
  process.exit(2);
}
main(process.argv.slice(2)).then((code) => process.exit(code));
