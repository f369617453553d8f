'use strict';
// proflink-otel: OpenTelemetry JS integration of proflink (see the package README section of
// the proflink README, "Node.js (OpenTelemetry JS)").
const { native, libraryPath } = require('./native');
const { ProflinkContextManager } = require('./context_manager');
const { ProflinkSpanProcessor, ATTRIBUTE } = require('./span_processor');
const { publishResource } = require('./resource');

module.exports = {
  ProflinkContextManager,
  ProflinkSpanProcessor,
  publishResource,
  STACK_TRACE_IDS_ATTRIBUTE: ATTRIBUTE,
  // true when the preloaded proflink is found and active
  active: native !== null,
  libraryPath,
};
