// Why a claim could not be allocated, for people: the scheduler only says "cannot allocate all
// claims". Per request (or subrequest): how many of the node's devices its class and selectors
// select, and of those how many are already in use, carry an untolerated taint, or lack the
// capacity asked for. Diagnostic only; the allocation decision is allocator.js's.
'use strict';

const { Allocator, gatherPools, toleratesTaint } = require('./allocator.js');
const { fitsCapacity } = require('./capacity.js');

function describe(a, request) {
  const cls = a.classes.get(request.deviceClassName);
  if (!cls) return `class ${request.deviceClassName} not found`;
  const counts = { selected: 0, inUse: 0, tainted: 0, noCapacity: 0 };
  for (const pool of gatherPools(a.slices, a.node)) {
    for (const slice of pool.slices) {
      for (const device of slice.devices) {
        let ok = true;
        for (const sel of cls.selectors.concat(request.selectors || [])) {
          const c = a.compile(sel.cel.expression);
          try {
            ok = ok && !c.error && c.matches(slice.driver, device);
          } catch (e) {
            ok = false;
          }
        }
        if (!ok) continue;
        counts.selected++;
        const id = `${slice.driver}/${slice.pool.name}/${device.name}`;
        if (!device.allowMultipleAllocations && a.state.allocatedDevices.has(id)) counts.inUse++;
        else if (!(device.taints || []).every((t) => (request.tolerations || []).some((tol) => toleratesTaint(tol, t)))) counts.tainted++;
        else {
          const fit = fitsCapacity(a.state.aggregatedCapacity.get(id) || {}, request.capacity && request.capacity.requests, device.capacity, null);
          if (fit.error || !fit.ok) counts.noCapacity++;
        }
      }
    }
  }
  const want = request.allocationMode === 'All' ? 'all' : String(request.count);
  return `wants ${want}, ${counts.selected} selected (${counts.inUse} in use, ${counts.tainted} with an untolerated taint, ${counts.noCapacity} without the capacity)`;
}

function explain(a, claim) {
  if (!(a instanceof Allocator)) return '';
  const parts = [];
  for (const r of claim.requests) {
    if (r.firstAvailable) for (const s of r.firstAvailable) parts.push(`request ${r.name}/${s.name} ${describe(a, s)}`);
    else parts.push(`request ${r.name} ${describe(a, r.exactly)}`);
  }
  if (claim.constraints.length) parts.push(`${claim.constraints.length} constraint(s)`);
  return parts.join('; ');
}

module.exports = { explain };
