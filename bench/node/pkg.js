'use strict';
// The Node benches load the integration and the OpenTelemetry SDK from integrations/node.
const path = require('path');
const { createRequire } = require('module');
const dir = path.join(__dirname, '..', '..', 'integrations', 'node');
module.exports = { req: createRequire(path.join(dir, 'package.json')), dir };
