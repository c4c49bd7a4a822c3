// node-redis 6 against oncekv: the realistic script of
// lib/node-redis-script.mjs with the client's default options (RESP3 with
// HELLO 3: a map is an object), and with RESP: 2.

import { createRequire } from 'node:module';

import { nodeRedisScript } from './lib/node-redis-script.mjs';

const require = createRequire(import.meta.url);
const redis = require('redis6');
const { version } = require('redis6/package.json');

nodeRedisScript(redis, { name: `node-redis@${version}`, version, proto: 3, statusShape: 'object', cursor0: '0' });
nodeRedisScript(redis, {
  name: `node-redis@${version}-resp2`, version, options: { RESP: 2 }, dbOffset: 1, proto: 2, statusShape: 'array', cursor0: '0',
});
