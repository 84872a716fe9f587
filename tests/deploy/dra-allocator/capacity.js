// Consumable capacity (KEP-5075) as k8s.io/dynamic-resource-allocation
// structured/internal/experimental/consumable_capacity.go (v0.34.0) computes it: how much of each
// capacity one allocation of a multi-allocatable device consumes, and whether it still fits.
// Quantities are Quantity objects (quantity.js); capacities are the device's v1 `capacity` map
// with values parsed (see objects.js: {value: Quantity, requestPolicy: {...} | undefined}).
'use strict';

const { Quantity } = require('./quantity.js');

// calculateConsumedCapacity: no request -> the policy's default, else the whole value;
// a request is rounded up per validRange (min, step) or validValues; without a policy it is taken as is.
function consumedFor(requested, capacity) {
  const policy = capacity.requestPolicy;
  if (!requested) return policy && policy.default ? policy.default : capacity.value;
  if (!policy) return requested;
  if (policy.validRange && policy.validRange.min) return roundUpRange(requested, policy.validRange);
  if (policy.validValues) return roundUpValidValues(requested, policy.validValues);
  return requested;
}

// roundUpRange: below min -> min; with a step, min + step * ceil((value - min) / step), computed
// on the integer values (Quantity.Value(), rounded up) and returned as a BinarySI quantity.
function roundUpRange(requested, range) {
  if (requested.cmp(range.min) < 0) return range.min;
  if (!range.step) return requested;
  const req = requested.value();
  const step = range.step.value();
  const min = range.min.value();
  const added = req - min;
  let n = added / step;
  if (added % step !== 0n) n += 1n;
  return Quantity.fromInt(min + step * n, 'BinarySI');
}

// roundUpValidValues: the first valid value >= the request (the list is sorted), else the request.
function roundUpValidValues(requested, values) {
  for (const v of values) if (requested.cmp(v) <= 0) return v;
  return requested;
}

// violatesPolicy: the default is always allowed; past validRange.max or off its step grid
// (on integer values), or not one of validValues, is not.
function violatesPolicy(value, policy) {
  if (!policy) return false;
  if (policy.default && value.cmp(policy.default) === 0) return false;
  if (policy.validRange) {
    const r = policy.validRange;
    if (r.max && value.cmp(r.max) > 0) return true;
    if (r.step && (value.value() - r.min.value()) % r.step.value() !== 0n) return true;
    return false;
  }
  if (policy.validValues && policy.validValues.length > 0) {
    return !policy.validValues.some((v) => value.cmp(v) === 0);
  }
  return false;
}

// CmpRequestOverCapacity: {ok} or {error} (a requested capacity the device does not have).
// `current`: what finished allocations consume ({name: Quantity}); `allocating`: what this
// Allocate call has handed out so far. Every capacity of the device is checked, shared or not.
function fitsCapacity(current, requests, capacities, allocating) {
  for (const name of Object.keys(requests || {})) {
    if (!(name in capacities)) return { error: 'some requested capacity has not been defined' };
  }
  for (const [name, cap] of Object.entries(capacities)) {
    const consumed = consumedFor(requests && requests[name], cap);
    if (violatesPolicy(consumed, cap.requestPolicy)) return { ok: false };
    let total = current[name] ? current[name].add(consumed) : consumed;
    if (allocating && allocating[name]) total = total.add(allocating[name]);
    if (total.cmp(cap.value) > 0) return { ok: false };
  }
  return { ok: true };
}

// GetConsumedCapacityFromRequest: one entry per capacity of the device.
function consumedCapacity(requests, capacities) {
  const out = {};
  for (const [name, cap] of Object.entries(capacities)) out[name] = consumedFor(requests && requests[name], cap);
  return out;
}

// ConsumedCapacityCollection.Insert / Remove on a Map deviceID -> {name: Quantity}.
function addConsumed(collection, id, consumed) {
  const cur = collection.get(id) || {};
  for (const [name, q] of Object.entries(consumed)) cur[name] = cur[name] ? cur[name].add(q) : q;
  collection.set(id, cur);
}

function removeConsumed(collection, id, consumed) {
  const cur = collection.get(id);
  if (!cur) return;
  for (const [name, q] of Object.entries(consumed)) if (cur[name]) cur[name] = cur[name].sub(q);
  if (Object.values(cur).every((q) => q.isZero())) collection.delete(id);
}

module.exports = { consumedFor, violatesPolicy, fitsCapacity, consumedCapacity, addConsumed, removeConsumed };
