'use strict';
// The SDK's resource, published through proflink_set_resource so that the OTel process context
// profilers read carries this SDK's service.instance.id and telemetry.sdk.* (profiles then join
// this process's other telemetry) instead of proflink's own defaults.
const { native } = require('./native');

// OTEL_RESOURCE_ATTRIBUTES syntax: "k=v,k2=v2", values percent-encoded. A key that the syntax
// cannot carry is left out rather than mangled.
const KEY_OK = /^[^\s,=%]+$/;

function resourceString(attributes) {
  const parts = [];
  for (const [k, v] of Object.entries(attributes || {})) {
    if (v === undefined || v === null || !KEY_OK.test(k)) continue;
    const s = Array.isArray(v) ? v.join(',') : String(v);
    parts.push(`${k}=${encodeURIComponent(s)}`);
  }
  return parts.join(',');
}

let published = null;

function sdkInfo() {
  try {
    return require('@opentelemetry/core').SDK_INFO;
  } catch (_) {
    return { 'telemetry.sdk.language': 'nodejs', 'telemetry.sdk.name': 'opentelemetry' };
  }
}

// Publishes `resource` (an SDK Resource) unless this exact resource already was. Returns the
// proflink answer (0 ok, -1 refused) or null when nothing was called.
function publishResource(resource) {
  if (!native || !resource || resource === published) return null;
  published = resource;
  let attrs;
  try {
    attrs = resource.attributes;
  } catch (_) {
    return null;
  }
  // The SDK leaves telemetry.sdk.* out of a resource the user built without its defaults;
  // they still describe this process better than proflink's own ("cpp", "proflink").
  const s = resourceString({ ...sdkInfo(), ...attrs });
  return s ? native.setResource(s) : null;
}

module.exports = { publishResource, resourceString };
