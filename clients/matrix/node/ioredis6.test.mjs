// ioredis 6 against oncekv: the realistic script of lib/ioredis-script.mjs
// with the client's default options (RESP3 with HELLO 3, replies mapped to
// RESP2 shapes: replyMapping "legacy"), with replyMapping "resp3" (a map is
// an object), and with protocol 2.

import { createRequire } from 'node:module';

import { ioredisScript } from './lib/ioredis-script.mjs';

const require = createRequire(import.meta.url);
const Redis = require('ioredis6').default;
const { version } = require('ioredis6/package.json');

ioredisScript(Redis, { name: `ioredis@${version}`, version, proto: 3, statusShape: 'array' });
ioredisScript(Redis, {
  name: `ioredis@${version}-resp3-mapping`, version, options: { replyMapping: 'resp3' }, dbOffset: 1, proto: 3, statusShape: 'object',
});
ioredisScript(Redis, {
  name: `ioredis@${version}-resp2`, version, options: { protocol: 2 }, dbOffset: 2, proto: 2, statusShape: 'array',
});
