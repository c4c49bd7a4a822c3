// node-redis 4 (RESP2 only) against oncekv: the realistic script of
// lib/node-redis-script.mjs with the client's default options. It does not
// send CLIENT SETINFO.

import { createRequire } from 'node:module';

import { nodeRedisScript } from './lib/node-redis-script.mjs';

const require = createRequire(import.meta.url);
const redis = require('redis4');
const { version } = require('redis4/package.json');

nodeRedisScript(redis, { name: `node-redis@${version}`, version: null, proto: 2, statusShape: 'array', cursor0: 0 });
