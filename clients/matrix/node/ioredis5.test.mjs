// ioredis 5 (RESP2 only) against oncekv: the realistic script of
// lib/ioredis-script.mjs with the client's default options.

import { createRequire } from 'node:module';

import { ioredisScript } from './lib/ioredis-script.mjs';

const require = createRequire(import.meta.url);
const Redis = require('ioredis5').default;
const { version } = require('ioredis5/package.json');

ioredisScript(Redis, { name: `ioredis@${version}`, version, proto: 2, statusShape: 'array' });
