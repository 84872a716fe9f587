// The scheduler's DRA allocator, as k8s.io/dynamic-resource-allocation structured (v0.34.0,
// Kubernetes 1.34) runs it with every DRA feature gate on, which selects
// structured/internal/experimental (allocator_experimental.go, pools_experimental.go,
// consumable_capacity.go, constraint.go). The structure follows Allocate / allocateOne /
// allocateDevice there, so that the search order, and thus the device picked, is the scheduler's:
// pools in the order they were first seen, slices in order, devices in order, first fit,
// depth-first with backtracking. README.md lists where this file and the Go code part.
//
// Inputs are normalized objects (objects.js). Pure: no I/O; CEL comes in as `compile`
// (cel-env.js), share IDs from `newShareID`.
'use strict';

const { fitsCapacity, consumedCapacity, addConsumed, removeConsumed } = require('./capacity.js');
const { Quantity } = require('./quantity.js');

const ALLOCATION_RESULTS_MAX_SIZE = 32; // resourceapi.AllocationResultsMaxSize
const ZERO = Quantity.fromInt(0);
const MAX_SIZE_EXCEEDED = Symbol('allocation max size exceeded'); // errAllocationResultMaxSizeExceeded

const deviceKey = (driver, pool, device) => `${driver}/${pool}/${device}`;
const requestKey = (c, r, s) => `${c}/${r}/${s}`;
const claimName = (claim) => (claim.namespace ? `${claim.namespace}/${claim.name}` : claim.name);

// --- node selection (pools_experimental.go nodeMatches; nodeaffinity for the selector) ---

function requirementMatches(req, node, field) {
  const value = field ? (req.key === 'metadata.name' ? node.name : undefined) : (node.labels || {})[req.key];
  const has = value !== undefined;
  switch (req.operator) {
    case 'In':
      return has && (req.values || []).includes(value);
    case 'NotIn':
      return !has || !(req.values || []).includes(value);
    case 'Exists':
      return has;
    case 'DoesNotExist':
      return !has;
    case 'Gt':
    case 'Lt': {
      if (!has || !/^-?[0-9]+$/.test(value)) return false;
      const a = BigInt(value);
      const b = BigInt((req.values || [])[0]);
      return req.operator === 'Gt' ? a > b : a < b;
    }
    default:
      throw new Error(`node selector operator ${req.operator} not supported`);
  }
}

// A NodeSelector matches when any term does; a term when all its requirements do; an empty term never.
function nodeSelectorMatches(selector, node) {
  return (selector.nodeSelectorTerms || []).some((t) => {
    const exprs = t.matchExpressions || [];
    const fields = t.matchFields || [];
    if (exprs.length + fields.length === 0) return false;
    return exprs.every((r) => requirementMatches(r, node, false)) && fields.every((r) => requirementMatches(r, node, true));
  });
}

function nodeMatches(node, nodeName, allNodes, nodeSelector) {
  if (nodeName) return !!node && node.name === nodeName;
  if (allNodes) return true;
  if (nodeSelector) return !!node && nodeSelectorMatches(nodeSelector, node);
  return false;
}

// --- pools (GatherPools) ---

const hasBindingConditions = (slice) => slice.devices.some((d) => d.bindingConditions != null);

// Pools whose slices the node can use; only the newest generation of a pool counts. Go collects
// pools in a map, so between pools its order is random; here it is the order of first appearance.
// Pools with binding conditions go last, as in Go.
function gatherPools(slices, node) {
  const pools = new Map();
  const withBinding = [];
  const add = (slice) => {
    const id = `${slice.driver}/${slice.pool.name}`;
    const pool = pools.get(id);
    if (!pool) {
      pools.set(id, { driver: slice.driver, pool: slice.pool.name, slices: [slice] });
      return;
    }
    const gen = pool.slices[0].pool.generation;
    if (slice.pool.generation < gen) return;
    if (slice.pool.generation > gen) pool.slices = [];
    pool.slices.push(slice);
  };
  for (const slice of slices) {
    if (slice.nodeName || slice.allNodes || slice.nodeSelector) {
      if (nodeMatches(node, slice.nodeName, slice.allNodes, slice.nodeSelector)) {
        if (hasBindingConditions(slice)) withBinding.push(slice);
        else add(slice);
      }
    } else if (slice.perDeviceNodeSelection) {
      if (slice.devices.some((d) => nodeMatches(node, d.nodeName, d.allNodes, d.nodeSelector))) {
        if (hasBindingConditions(slice)) withBinding.push(slice);
        else add(slice);
      }
    }
    // Anything else is some future extension: skipped, as Go does.
  }
  withBinding.forEach(add);
  const result = [];
  const last = [];
  for (const pool of pools.values()) {
    pool.incomplete = pool.slices.length !== pool.slices[0].pool.resourceSliceCount;
    const names = new Set();
    for (const s of pool.slices) {
      for (const d of s.devices) {
        if (names.has(d.name) && !pool.invalid) pool.invalid = `duplicate device name ${d.name}`;
        names.add(d.name);
      }
    }
    (pool.slices.some(hasBindingConditions) ? last : result).push(pool);
  }
  return result.concat(last);
}

// --- requests (requestAccessor) ---

function accessor(name, fields) {
  return {
    name,
    deviceClassName: fields.deviceClassName,
    allocationMode: fields.allocationMode,
    count: fields.count,
    adminAccess: fields.adminAccess === true,
    hasAdminAccess: fields.adminAccess !== undefined && fields.adminAccess !== null,
    selectors: fields.selectors || [],
    tolerations: fields.tolerations || [],
    capacity: fields.capacity,
  };
}

// resourceclaim.ToleratesTaint
function toleratesTaint(t, taint) {
  if (t.effect && t.effect !== taint.effect) return false;
  if (t.key && t.key !== taint.key) return false;
  switch (t.operator || 'Equal') {
    case 'Equal':
      return (t.value || '') === (taint.value || '');
    case 'Exists':
      return true;
    default:
      return false;
  }
}

// allTaintsTolerated: every taint, whatever its effect (None included in 1.34), needs a toleration.
function allTaintsTolerated(device, request) {
  return (device.taints || []).every((taint) => request.tolerations.some((t) => toleratesTaint(t, taint)));
}

// lookupAttribute: the fully qualified name, or the bare name when the domain is the driver's.
function lookupAttribute(device, driver, name) {
  if (name in device.attributes) return device.attributes[name];
  const i = name.indexOf('/');
  if (i < 0 || name.slice(0, i) !== driver) return undefined;
  return device.attributes[name.slice(i + 1)];
}

// matchAttributeConstraint: every device of the named requests (all requests when none are
// named) has the attribute, with one value of one type.
class MatchAttribute {
  constructor(requests, attributeName) {
    this.requests = new Set(requests || []);
    this.attributeName = attributeName;
    this.numDevices = 0;
    this.attribute = null;
  }

  applies(request, subRequest) {
    if (this.requests.size === 0) return true;
    return this.requests.has(request) || (subRequest !== '' && this.requests.has(`${request}/${subRequest}`));
  }

  add(request, subRequest, device, driver) {
    if (!this.applies(request, subRequest)) return true;
    const attr = lookupAttribute(device, driver, this.attributeName);
    if (!attr) return false;
    if (this.numDevices === 0) {
      this.attribute = attr;
      this.numDevices = 1;
      return true;
    }
    const same = (k) => this.attribute[k] !== undefined && String(this.attribute[k]) === String(attr[k]);
    let ok;
    if (attr.string !== undefined) ok = same('string');
    else if (attr.int !== undefined) ok = same('int');
    else if (attr.bool !== undefined) ok = same('bool');
    else if (attr.version !== undefined) ok = same('version');
    else ok = false;
    if (!ok) return false;
    this.numDevices++;
    return true;
  }

  remove(request, subRequest) {
    if (!this.applies(request, subRequest)) return;
    this.numDevices--;
  }
}

// --- the allocator ---

class AllocationError extends Error {}

// state: { allocatedDevices: Set<deviceKey>, aggregatedCapacity: Map<deviceKey, {name: Quantity}> }
// (AllocatedState), built from claims already allocated with stateFromAllocations.
class Allocator {
  constructor({ slices, classes, compile, state, node, newShareID }) {
    this.slices = slices;
    this.classes = new Map(classes.map((c) => [c.name, c]));
    this.compile = compile;
    this.state = state || emptyState();
    this.node = node;
    this.newShareID = newShareID;
    this.availableCounters = new Map(); // per slice name, computed once (Go caches it on the Allocator)
  }

  // One scheduler Allocate call for the claims of one pod on this.node: an AllocationResult per
  // claim, or null when they cannot all be allocated. Throws AllocationError where Go returns an
  // error (bad CEL, a missing class, a CEL runtime error such as a missing attribute, ...).
  allocate(claims) {
    return new Run(this, claims).allocate();
  }
}

function emptyState() {
  return { allocatedDevices: new Set(), aggregatedCapacity: new Map() };
}

// foreachAllocatedDevice in the scheduler plugin: a result with a shareID counts as capacity
// consumed on its device, any other (not adminAccess) makes the device allocated.
function addAllocationToState(state, allocation) {
  for (const r of (allocation && allocation.devices && allocation.devices.results) || []) {
    if (r.adminAccess === true) continue;
    const id = deviceKey(r.driver, r.pool, r.device);
    if (r.shareID) {
      if (r.consumedCapacity) {
        const consumed = {};
        for (const [name, q] of Object.entries(r.consumedCapacity)) consumed[name] = q instanceof Quantity ? q : Quantity.parse(String(q));
        addConsumed(state.aggregatedCapacity, id, consumed);
      }
      continue;
    }
    state.allocatedDevices.add(id);
  }
}

class Run {
  constructor(a, claims) {
    this.a = a;
    this.claims = claims;
    this.matchCache = new Map();
    this.constraints = [];
    this.consumedCounters = new Map();
    this.requestData = new Map();
    this.result = claims.map(() => []);
    this.allocatingCapacity = new Map();
    this.allocatingDevices = new Map();
  }

  allocate() {
    this.pools = gatherPools(this.a.slices, this.a.node);
    this.claims.forEach((claim, c) => {
      let minDevices = 0;
      claim.requests.forEach((request, r) => {
        if (request.firstAvailable) {
          let min = Infinity;
          // Go validates subrequest i under the key of subrequest i-1 (it sets the index after
          // the call); only the cache of selector matches for "All" subrequests sees that.
          let key = { c, r, s: 0 };
          request.firstAvailable.forEach((sub, i) => {
            const data = this.validate(accessor(sub.name, sub), accessor(request.name, {}), key);
            key = { c, r, s: i };
            this.requestData.set(requestKey(c, r, i), data);
            min = Math.min(min, data.numDevices);
          });
          minDevices += min;
        } else {
          const data = this.validate(accessor(request.name, request.exactly), null, { c, r, s: 0 });
          this.requestData.set(requestKey(c, r, 0), data);
          minDevices += data.numDevices;
        }
      });
      if (minDevices > ALLOCATION_RESULTS_MAX_SIZE) {
        throw new AllocationError(`claim ${claimName(claim)}: number of requested devices ${minDevices} exceeds the claim limit of ${ALLOCATION_RESULTS_MAX_SIZE}`);
      }
      this.constraints[c] = claim.constraints.map((con, i) => {
        if (con.matchAttribute) return new MatchAttribute(con.requests, con.matchAttribute);
        if (con.distinctAttribute) {
          throw new AllocationError(`claim ${claimName(claim)}, constraint #${i}: distinctAttribute is not simulated (README.md)`);
        }
        throw new AllocationError(`claim ${claimName(claim)}, constraint #${i}: empty constraint (unsupported constraint type?)`);
      });
    });

    const [done, err] = this.allocateOne({ c: 0, r: 0, s: 0, d: 0 }, false);
    if (err === MAX_SIZE_EXCEEDED) throw new AllocationError('allocation max size exceeded');
    if (!done) return null;
    return this.claims.map((claim, c) => this.allocationResult(claim, c));
  }

  validate(request, parent, key) {
    const claim = this.claims[key.c];
    const data = { request, parent, numDevices: 0, selected: 0 };
    request.selectors.forEach((sel, i) => {
      if (!sel.cel) throw new AllocationError(`claim ${claimName(claim)}, request ${request.name}, selector #${i}: CEL expression empty (unsupported selector type?)`);
    });
    if (!request.deviceClassName) throw new AllocationError(`claim ${claimName(claim)}, request ${request.name}: missing device class name (unsupported request type?)`);
    const cls = this.a.classes.get(request.deviceClassName);
    if (!cls) throw new AllocationError(`claim ${claimName(claim)}, request ${request.name}: could not retrieve device class ${request.deviceClassName}: deviceclass.resource.k8s.io "${request.deviceClassName}" not found`);
    data.class = cls;
    if (request.allocationMode === 'ExactCount') {
      data.numDevices = request.count;
    } else if (request.allocationMode === 'All') {
      data.allDevices = [];
      for (const pool of this.pools) {
        if (pool.incomplete) throw new AllocationError(`claim ${claimName(claim)}, request ${request.name}: asks for all devices, but resource pool ${pool.driver}/${pool.pool} is currently being updated`);
        if (pool.invalid) throw new AllocationError(`claim ${claimName(claim)}, request ${request.name}: asks for all devices, but resource pool ${pool.driver}/${pool.pool} is currently invalid`);
        for (const slice of pool.slices) {
          slice.devices.forEach((device, index) => {
            if (!this.isSelectable(key, data, slice, index)) return;
            const fit = this.fitsCapacity(request, slice, index);
            if (fit.error || !fit.ok) return;
            data.allDevices.push({ id: deviceKey(slice.driver, slice.pool.name, device.name), device, slice });
          });
        }
      }
      data.numDevices = data.allDevices.length;
    } else {
      throw new AllocationError(`claim ${claimName(claim)}, request ${request.name}: unsupported count mode ${request.allocationMode}`);
    }
    return data;
  }

  // [success, err]: err is MAX_SIZE_EXCEEDED (Go's errAllocationResultMaxSizeExceeded) or null;
  // fatal errors are thrown.
  allocateOne(r, allocateSubRequest) {
    if (r.c >= this.claims.length) return [true, null];
    const claim = this.claims[r.c];
    if (r.r >= claim.requests.length) {
      const [ok, err] = this.allocateOne({ c: r.c + 1, r: 0, s: 0, d: 0 }, false);
      if (err === MAX_SIZE_EXCEEDED) return [false, null];
      return [ok, err];
    }
    const key = requestKey(r.c, r.r, r.s);
    const data = this.requestData.get(key);

    if (!allocateSubRequest && data.parent) {
      let allExceeded = true;
      for (let s = 0; ; s++) {
        if (!this.requestData.has(requestKey(r.c, r.r, s))) return [false, allExceeded ? MAX_SIZE_EXCEEDED : null];
        const [ok, err] = this.allocateOne({ c: r.c, r: r.r, s, d: r.d }, true);
        if (err === MAX_SIZE_EXCEEDED) continue;
        allExceeded = false;
        if (ok) {
          data.selected = s;
          return [true, null];
        }
      }
    }

    const request = data.request;
    const all = request.allocationMode === 'All';
    if (all && data.allDevices.length === 0) return [false, null];
    if (r.d >= data.numDevices) return this.allocateOne({ c: r.c, r: r.r + 1, s: 0, d: 0 }, false);
    if (this.result[r.c].length + data.numDevices - r.d > ALLOCATION_RESULTS_MAX_SIZE) return [false, MAX_SIZE_EXCEEDED];

    if (all) {
      const dev = data.allDevices[r.d];
      const [ok, deallocate] = this.allocateDevice(r, dev, true);
      if (!ok) return [false, null];
      const [done, err] = this.allocateOne({ c: r.c, r: r.r, s: r.s, d: r.d + 1 }, allocateSubRequest);
      if (err || !done) {
        deallocate();
        return [false, err];
      }
      return [true, null];
    }

    for (const pool of this.pools) {
      // Allocating from an invalid pool is not safe; Go fails the whole allocation.
      if (pool.invalid) throw new AllocationError(`pool ${pool.pool} is invalid: ${pool.invalid}`);
      for (const slice of pool.slices) {
        for (let index = 0; index < slice.devices.length; index++) {
          const device = slice.devices[index];
          const id = deviceKey(pool.driver, pool.pool, device.name);
          if (request.adminAccess && this.allocatingForClaim(id, r.c)) continue;
          if (!request.adminAccess && this.inUse(id)) continue;
          if (!this.isSelectable({ c: r.c, r: r.r, s: r.s }, data, slice, index)) continue;
          const fit = this.fitsCapacity(request, slice, index);
          if (fit.error || !fit.ok) continue;
          const [ok, deallocate] = this.allocateDevice(r, { id, device, slice }, false);
          if (!ok) continue;
          const [done, err] = this.allocateOne({ c: r.c, r: r.r, s: r.s, d: r.d + 1 }, allocateSubRequest);
          if (!err && done) return [true, null];
          deallocate();
          if (err) return [false, err];
        }
      }
    }
    return [false, null];
  }

  inUse(id) {
    return this.a.state.allocatedDevices.has(id) || (this.allocatingDevices.get(id) || new Set()).size > 0;
  }

  allocatingForClaim(id, c) {
    return (this.allocatingDevices.get(id) || new Set()).has(c);
  }

  // isSelectable: class selectors, then request selectors, then per-device node selection; the
  // answer is cached per device and request (errors are not).
  isSelectable(k, data, slice, index) {
    const device = slice.devices[index];
    const id = deviceKey(slice.driver, slice.pool.name, device.name);
    const cacheKey = `${id}|${requestKey(k.c, k.r, k.s)}`;
    if (this.matchCache.has(cacheKey)) return this.matchCache.get(cacheKey);
    let match = this.selectorsMatch(k, device, slice.driver, data.class, data.class.selectors);
    if (match) match = this.selectorsMatch(k, device, slice.driver, null, data.request.selectors);
    if (match && slice.perDeviceNodeSelection) match = nodeMatches(this.a.node, device.nodeName, device.allNodes, device.nodeSelector);
    this.matchCache.set(cacheKey, match);
    return match;
  }

  selectorsMatch(k, device, driver, cls, selectors) {
    const who = cls ? `class ${cls.name}` : `claim ${claimName(this.claims[k.c])}`;
    for (let i = 0; i < selectors.length; i++) {
      const compiled = this.a.compile(selectors[i].cel.expression);
      if (compiled.error) throw new AllocationError(`${who}: selector #${i}: CEL compile error: ${compiled.error}`);
      let matches;
      try {
        matches = compiled.matches(driver, device);
      } catch (e) {
        throw new AllocationError(`${who}: selector #${i}: CEL runtime error: ${e.message}`);
      }
      if (!matches) return false;
    }
    return true;
  }

  // CmpRequestOverCapacity on slice.devices[index] (the Go method takes a slice and an index).
  fitsCapacity(request, slice, index) {
    const device = slice.devices[index];
    if (!device) {
      // Go indexes slice.Spec.Devices here and would panic (see allocateDevice).
      throw new AllocationError(`device index ${index} out of range for slice ${slice.name}: kube-scheduler 1.34 panics here (README.md)`);
    }
    const id = deviceKey(slice.driver, slice.pool.name, device.name);
    const current = this.a.state.aggregatedCapacity.get(id) || {};
    const requests = request.capacity && request.capacity.requests;
    return fitsCapacity(current, requests, device.capacity, this.allocatingCapacity.get(id));
  }

  // allocateDevice: [ok, deallocate]. Mirrors Go's order of checks, including what Go does not
  // undo when a later check fails (counters taken before a taint or constraint refuses the
  // device; constraints and in-use marks when the capacity re-check fails).
  allocateDevice(r, dev, must) {
    const claim = this.claims[r.c];
    const data = this.requestData.get(requestKey(r.c, r.r, r.s));
    const request = data.request;
    const multi = dev.device.allowMultipleAllocations === true;
    if (!multi && request.adminAccess && this.allocatingForClaim(dev.id, r.c)) return [false];
    if (!request.adminAccess && this.inUse(dev.id)) return [false];
    if (dev.device.consumesCounters.length > 0 && !this.checkAvailableCounters(dev)) return [false];

    const base = data.parent ? data.parent.name : request.name;
    const sub = data.parent ? request.name : '';
    if (!allTaintsTolerated(dev.device, request)) return [false];

    const constraints = this.constraints[r.c];
    for (let i = 0; i < constraints.length; i++) {
      if (!constraints[i].add(base, sub, dev.device, dev.slice.driver)) {
        if (must) throw new AllocationError(`claim ${claimName(claim)}, request ${request.name}: cannot add device ${dev.id} because a claim constraint would not be satisfied`);
        for (let e = 0; e < i; e++) constraints[e].remove(base, sub);
        return [false];
      }
    }

    if (!this.allocatingDevices.has(dev.id)) this.allocatingDevices.set(dev.id, new Set());
    if (!multi) this.allocatingDevices.get(dev.id).add(r.c);

    // Go re-checks capacity with r.deviceIndex, the index of the device within the request, as
    // the index into the slice: so it checks slice.devices[r.d], not necessarily this device.
    const fit = this.fitsCapacity(request, dev.slice, r.d);
    if (fit.error || !fit.ok) return [false];

    let consumed = null;
    let shareID = null;
    if (multi) {
      const requests = request.capacity && request.capacity.requests;
      consumed = consumedCapacity(requests, dev.device.capacity);
      shareID = this.a.newShareID();
      addConsumed(this.allocatingCapacity, dev.id, consumed);
    }
    const results = this.result[r.c];
    const previous = results.length;
    results.push({
      request: request.name,
      parentRequest: data.parent ? data.parent.name : '',
      id: dev.id,
      device: dev.device,
      slice: dev.slice,
      driver: dev.slice.driver,
      pool: dev.slice.pool.name,
      shareID,
      consumedCapacity: consumed && Object.keys(consumed).length > 0 ? consumed : null,
      adminAccess: request.adminAccess ? true : undefined,
    });
    return [
      true,
      () => {
        for (const con of constraints) con.remove(base, sub);
        this.allocatingDevices.get(dev.id).delete(r.c);
        if (multi) {
          const done = results[previous].consumedCapacity;
          if (done) removeConsumed(this.allocatingCapacity, dev.id, done);
        } else if (dev.device.consumesCounters.length > 0) {
          this.deallocateCounters(dev);
        }
        results.length = previous;
      },
    ];
  }

  // checkAvailableCounters: the slice's shared counters, less what finished allocations of
  // (exclusively) allocated devices consume, must cover everything this run has taken plus this device.
  checkAvailableCounters(dev) {
    const slice = dev.slice;
    let available = this.a.availableCounters.get(slice.name);
    if (!available) {
      available = new Map();
      for (const set of slice.sharedCounters) available.set(set.name, Object.assign({}, set.counters));
      for (const d of slice.devices) {
        if (!this.a.state.allocatedDevices.has(deviceKey(slice.driver, slice.pool.name, d.name))) continue;
        for (const use of d.consumesCounters) {
          const set = available.get(use.counterSet);
          if (!set) continue;
          for (const [name, q] of Object.entries(use.counters)) if (set[name]) set[name] = set[name].sub(q);
        }
      }
      this.a.availableCounters.set(slice.name, available);
    }
    if (!this.consumedCounters.has(slice.name)) this.consumedCounters.set(slice.name, new Map());
    const consumed = this.consumedCounters.get(slice.name);
    for (const use of dev.device.consumesCounters) {
      if (!consumed.has(use.counterSet)) consumed.set(use.counterSet, {});
      const set = consumed.get(use.counterSet);
      for (const [name, q] of Object.entries(use.counters)) set[name] = set[name] ? set[name].add(q) : q;
    }
    for (const [setName, counters] of available) {
      const used = consumed.get(setName) || {};
      for (const [name, q] of Object.entries(counters)) {
        // A counter this run has not touched counts as 0 consumed (Go's zero value), so a
        // counter already overdrawn by finished allocations refuses every device of the slice.
        if (q.cmp(used[name] || ZERO) < 0) {
          this.deallocateCounters(dev);
          return false;
        }
      }
    }
    return true;
  }

  deallocateCounters(dev) {
    const consumed = this.consumedCounters.get(dev.slice.name);
    for (const use of dev.device.consumesCounters) {
      const set = consumed.get(use.counterSet) || {};
      for (const [name, q] of Object.entries(use.counters)) if (set[name]) set[name] = set[name].sub(q);
    }
  }

  allocationResult(claim, c) {
    const results = this.result[c].map((d) => {
      const out = {
        request: d.parentRequest ? `${d.parentRequest}/${d.request}` : d.request,
        driver: d.driver,
        pool: d.pool,
        device: d.device.name,
      };
      if (d.adminAccess !== undefined) out.adminAccess = d.adminAccess;
      // DRADeviceBindingConditions on: the device's conditions travel with the result.
      if (d.device.bindingConditions && d.device.bindingConditions.length) out.bindingConditions = d.device.bindingConditions;
      if (d.device.bindingFailureConditions && d.device.bindingFailureConditions.length) out.bindingFailureConditions = d.device.bindingFailureConditions;
      if (d.shareID) out.shareID = d.shareID;
      if (d.consumedCapacity) {
        out.consumedCapacity = Object.fromEntries(Object.entries(d.consumedCapacity).map(([k, q]) => [k, q.toString()]));
      }
      return out;
    });
    // Config (v0.34.0): every config of each request's class, for all requests; then the
    // claim's configs, once per request (or selected subrequest) they name.
    const config = [];
    claim.requests.forEach((request, r) => {
      let data = this.requestData.get(requestKey(c, r, 0));
      if (data.parent) data = this.requestData.get(requestKey(c, r, data.selected));
      for (const cfg of data.class.config || []) config.push(Object.assign({ source: 'FromClass' }, withoutRequests(cfg)));
    });
    for (const cfg of claim.config) {
      if (!cfg.requests || cfg.requests.length === 0) {
        config.push(Object.assign({ source: 'FromClaim' }, cfg));
        continue;
      }
      claim.requests.forEach((request, r) => {
        if (cfg.requests.includes(request.name)) {
          config.push(Object.assign({ source: 'FromClaim' }, cfg));
          return;
        }
        const data = this.requestData.get(requestKey(c, r, 0));
        if (!data.parent) return;
        if (cfg.requests.includes(`${request.name}/${request.firstAvailable[data.selected].name}`)) {
          config.push(Object.assign({ source: 'FromClaim' }, cfg));
        }
      });
    }
    const allocation = { devices: { results } };
    if (config.length) allocation.devices.config = config;
    const nodeSelector = this.nodeSelector(this.result[c]);
    if (nodeSelector) allocation.nodeSelector = nodeSelector;
    return allocation;
  }

  // createNodeSelector: a node-local device pins the claim to this node; otherwise the slices'
  // selectors' requirements combined into one term; nothing when the devices are everywhere.
  nodeSelector(results) {
    const term = { matchFields: [], matchExpressions: [] };
    for (const d of results) {
      const perDevice = d.slice.perDeviceNodeSelection === true;
      const nodeName = perDevice ? d.device.nodeName : d.slice.nodeName;
      const selector = perDevice ? d.device.nodeSelector : d.slice.nodeSelector;
      if (nodeName || d.device.bindsToNode) {
        return { nodeSelectorTerms: [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: [this.a.node ? this.a.node.name : ''] }] }] };
      }
      if (selector) {
        const terms = selector.nodeSelectorTerms || [];
        if (terms.length > 1) throw new AllocationError(`unsupported ResourceSlice.NodeSelector with ${terms.length} terms`);
        if (terms.length === 1) {
          addRequirements(terms[0].matchFields, term.matchFields);
          addRequirements(terms[0].matchExpressions, term.matchExpressions);
        }
      }
    }
    if (term.matchFields.length === 0 && term.matchExpressions.length === 0) return null;
    const out = {};
    if (term.matchExpressions.length) out.matchExpressions = term.matchExpressions;
    if (term.matchFields.length) out.matchFields = term.matchFields;
    return { nodeSelectorTerms: [out] };
  }
}

function withoutRequests(cfg) {
  const out = Object.assign({}, cfg);
  delete out.requests;
  return out;
}

function addRequirements(from, to) {
  for (const req of from || []) {
    const values = new Set(req.values || []);
    const present = to.some(
      (t) => t.key === req.key && t.operator === req.operator && (t.values || []).length === values.size && (t.values || []).every((v) => values.has(v)),
    );
    if (!present) to.push(req);
  }
}

module.exports = { Allocator, AllocationError, addAllocationToState, emptyState, gatherPools, toleratesTaint, nodeSelectorMatches };
