// The realistic script for node-redis (4 and 6 share most of their API):
// connect with a password and a database, plain commands, pipelines (a
// MULTI run as a pipeline, and commands issued together, which node-redis
// pipelines by itself), MULTI/EXEC with WATCH, SCAN through scanIterator,
// and the ONCE commands through client.sendCommand(): claim → complete →
// replay, waiters woken by a complete and an abort on another connection,
// and ONCE.STATUS in the connection's shape.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import {
  checkScanned, errorMessage, eventually, onceReply, onceStatus, scanKeys, scrambled, server, track, within,
} from './common.mjs';

// nodeRedisScript registers the script as a describe block.
//   redis       the package (require('redis4')…)
//   name        the block's name, also the key prefix
//   version     the version the client reports (CLIENT SETINFO LIB-VER), or
//               null for a client that does not send it
//   options     extra createClient options (RESP…)
//   dbOffset    added to ONCEKV_DB: each block of a file uses its own db
//   proto       the RESP version the connection must end up speaking
//   statusShape what ONCE.STATUS looks like to the caller (see onceStatus)
//   cursor0     SCAN's first cursor: 0 in node-redis 4, '0' from 5 on
export function nodeRedisScript(redis, { name, version, options = {}, dbOffset = 0, proto, statusShape, cursor0 }) {
  describe(name, () => {
    const srv = server();
    const db = srv.db + dbOffset;
    const config = ({ socket = {}, ...extra } = {}) => ({
      socket: { host: srv.host, port: srv.port, connectTimeout: 5000, ...socket },
      password: srv.password,
      database: db,
      ...options,
      ...extra,
    });
    const clients = [];
    // open connects a new client of the same application configuration.
    const open = async (extra = {}) => {
      const c = redis.createClient(config(extra));
      c.on('error', () => {}); // errors surface through the commands' promises
      clients.push(c);
      await c.connect();
      return c;
    };
    const k = (s) => `${name}:${s}`;
    const send = (c, ...args) => c.sendCommand(args.map(String));
    let r;

    before(async () => {
      r = await open();
      assert.equal(await r.ping(), 'PONG');
      // The db is this block's own: start it empty, so that the script can
      // run again against the same server.
      assert.equal(await r.flushDb(), 'OK');
    });
    after(async () => {
      await Promise.allSettled(clients.map((c) => (c.isReady ? c.quit() : c.isOpen && c.disconnect())));
    });

    it('connects with a password and a db number', async () => {
      // HELLO without a version reports the protocol the connection speaks.
      const hello = await send(r, 'HELLO');
      let h = hello;
      if (Array.isArray(hello)) {
        h = {};
        for (let i = 0; i + 1 < hello.length; i += 2) h[hello[i]] = hello[i + 1];
      }
      assert.equal(Array.isArray(hello), statusShape === 'array', `HELLO's shape: ${JSON.stringify(hello)}`);
      assert.equal(h.proto, proto, `HELLO: proto ${h.proto}, want ${proto} (${JSON.stringify(hello)})`);

      const info = String(await send(r, 'CLIENT', 'INFO'));
      const fields = info.trim().split(' ');
      const want = [`db=${db}`, `resp=${proto}`, 'user=default'];
      if (version) want.push('lib-name=node-redis', `lib-ver=${version}`);
      for (const w of want) {
        assert.ok(fields.includes(w), `CLIENT INFO ${JSON.stringify(info)}: want ${w}`);
      }

      assert.equal(await r.set(k('db'), 'mine'), 'OK');
      const db0 = await open({ database: 0 });
      assert.equal(await db0.get(k('db')), null, 'a key set in db N is not in db 0');
      assert.equal(await r.get(k('db')), 'mine');

      // A wrong password: connect() fails with the server's WRONGPASS.
      const wrong = redis.createClient(config({ password: 'wrong', socket: { reconnectStrategy: false } }));
      const errors = [];
      wrong.on('error', (e) => errors.push(errorMessage(e)));
      try {
        await assert.rejects(wrong.connect(), (e) => errorMessage(e).startsWith('WRONGPASS'));
      } finally {
        if (wrong.isOpen) await wrong.disconnect();
      }
    });

    it('strings and expiry', async () => {
      assert.equal(await r.set(k('s'), 'hello'), 'OK');
      assert.equal(await r.get(k('s')), 'hello');
      assert.equal(await r.get(k('missing')), null);
      assert.equal(await r.incr(k('n')), 1);
      assert.equal(await r.incrBy(k('n'), 41), 42);
      await assert.rejects(r.incr(k('s')), (e) => errorMessage(e) === 'ERR value is not an integer or out of range');
      assert.deepEqual(await r.mGet([k('s'), k('missing'), k('n')]), ['hello', null, '42']);
      assert.equal(await r.set(k('ex'), 'v', { EX: 100 }), 'OK');
      const ttl = await r.ttl(k('ex'));
      assert.ok(ttl >= 99 && ttl <= 100, `TTL ${ttl}`);
      assert.equal(await r.ttl(k('s')), -1);
      assert.equal(await r.exists([k('s'), k('missing'), k('n')]), 2);
      assert.equal(await r.del([k('s'), k('missing')]), 1);
    });

    it('pipelines', async () => {
      const n = 100;
      const m = r.multi();
      for (let i = 0; i < n; i++) {
        m.set(k(`p:${i}`), `v${i}`);
        m.incr(k('p:counter'));
        m.get(k(`p:${i}`));
      }
      const res = await m.execAsPipeline();
      assert.equal(res.length, 3 * n);
      for (let i = 0; i < n; i++) {
        assert.equal(res[3 * i], 'OK', `SET #${i}`);
        assert.equal(res[3 * i + 1], i + 1, `INCR #${i}`);
        assert.equal(res[3 * i + 2], `v${i}`, `GET #${i}`);
      }
      // Commands issued in the same tick go out as one pipeline.
      const got = await Promise.all(Array.from({ length: n }, (_, i) => r.get(k(`p:${i}`))));
      assert.deepEqual(got, Array.from({ length: n }, (_, i) => `v${i}`));
    });

    it('MULTI/EXEC and WATCH', async () => {
      const res = await r.multi().set(k('tx'), '10').incr(k('tx')).incrBy(k('tx'), 5).get(k('tx')).exec();
      assert.deepEqual(res, ['OK', 11, 16, '16']);

      // A command that fails at EXEC time fails alone: the others apply.
      await assert.rejects(
        r.multi().set(k('tx:s'), 'text').incr(k('tx:s')).set(k('tx:t'), 'applied').exec(),
        (e) => {
          assert.deepEqual(e.errorIndexes, [1], `errorIndexes of ${errorMessage(e)}`);
          assert.match(errorMessage(e.replies[1]), /^ERR value is not an integer/);
          assert.equal(e.replies[0], 'OK');
          assert.equal(e.replies[2], 'OK');
          return true;
        },
      );
      assert.equal(await r.get(k('tx:t')), 'applied');

      // Optimistic locking on a connection of its own: another connection
      // changes the watched key, EXEC aborts.
      const w = await open();
      await w.set(k('balance'), '100');
      assert.equal(await w.watch(k('balance')), 'OK');
      const seen = Number(await w.get(k('balance')));
      await r.set(k('balance'), '50'); // someone else, meanwhile
      await assert.rejects(w.multi().set(k('balance'), String(seen - 30)).exec(),
        (e) => e instanceof redis.WatchError, 'EXEC after a watched key changed');
      assert.equal(await r.get(k('balance')), '50');
      await w.watch(k('balance'));
      const now = Number(await w.get(k('balance')));
      assert.deepEqual(await w.multi().set(k('balance'), String(now - 30)).exec(), ['OK']);
      assert.equal(await r.get(k('balance')), '20');
    });

    it('SCAN iteration', async () => {
      const n = 600;
      const want = scanKeys(k('scan:'), n);
      const m = r.multi();
      for (const i of scrambled(n)) m.set(want[i], String(i));
      await m.execAsPipeline();

      // node-redis 4 yields keys one by one, 5 and later in batches.
      const collect = async (opts) => {
        const got = [];
        for await (const x of r.scanIterator(opts)) {
          if (Array.isArray(x)) got.push(...x);
          else got.push(x);
        }
        return got;
      };
      for (const count of [undefined, 7, 100, 5000]) {
        const got = await collect({ MATCH: k('scan:*'), ...(count ? { COUNT: count } : {}) });
        checkScanned(got, want, `scanIterator COUNT ${count ?? 'default'}`);
      }
      // The cursor loop by hand.
      const got = [];
      let cursor = cursor0;
      do {
        const reply = await r.scan(cursor, { MATCH: k('scan:00*'), COUNT: 10 });
        got.push(...reply.keys);
        cursor = reply.cursor;
      } while (String(cursor) !== '0');
      checkScanned(got, want.slice(0, 100), 'SCAN MATCH loop');
    });

    it('ONCE: claim, complete, replay', async () => {
      const key = k('once:charge');
      const other = await open();
      const c = onceReply(await send(r, 'ONCE.CLAIM', key, 'LEASE', 10000, 'FINGERPRINT', 'sha256:9f86'), 'CLAIM');
      assert.equal(c.state, 'claimed');
      assert.ok(c.detail > 0, `token ${c.detail}`);
      const token = c.detail;

      let st = onceStatus(await send(r, 'ONCE.STATUS', key), statusShape, 'STATUS running');
      assert.equal(st.state, 'running');
      assert.equal(st.token, token);
      assert.ok(st['lease-ms'] > 0 && st['lease-ms'] <= 10000, `lease-ms ${st['lease-ms']}`);
      assert.equal(st.waiters, 0);
      assert.equal(st.fingerprint, 'sha256:9f86');

      const busy = onceReply(await send(other, 'ONCE.CLAIM', key), 'CLAIM while running');
      assert.equal(busy.state, 'running');
      assert.ok(busy.detail > 0 && busy.detail <= 10000, `ms left ${busy.detail}`);
      await assert.rejects(send(other, 'ONCE.CLAIM', key, 'FINGERPRINT', 'sha256:other'),
        (e) => errorMessage(e).startsWith('MISMATCH'));
      await assert.rejects(send(r, 'ONCE.COMPLETE', key, token + 1, 'x'), (e) => errorMessage(e).startsWith('STALE'));
      assert.equal(await send(r, 'ONCE.EXTEND', key, token, 'LEASE', 20000), 'OK');

      const receipt = '{"receipt":"ch_123"}';
      assert.equal(await send(r, 'ONCE.COMPLETE', key, token, receipt, 'KEEP', 60000), 'OK');
      await assert.rejects(send(r, 'ONCE.COMPLETE', key, token, receipt), (e) => errorMessage(e).startsWith('STALE'));

      const replay = onceReply(await send(other, 'ONCE.CLAIM', key, 'WAIT', 5000, 'FINGERPRINT', 'sha256:9f86'), 'replay');
      assert.deepEqual(replay, { state: 'done', detail: receipt });
      st = onceStatus(await send(other, 'ONCE.STATUS', key), statusShape, 'STATUS done');
      assert.equal(st.state, 'done');
      assert.equal(st.token, token);
      assert.ok(st['keep-ms'] > 0 && st['keep-ms'] <= 60000, `keep-ms ${st['keep-ms']}`);

      assert.equal(await r.type(key), 'once');
      await assert.rejects(r.get(key), (e) => errorMessage(e).startsWith('WRONGTYPE'));
      const ttl = await r.pTTL(key);
      assert.ok(ttl > 0 && ttl <= 60000, `PTTL ${ttl}`);
      const typed = await r.scan(cursor0, { MATCH: k('once:*'), COUNT: 1000, TYPE: 'once' });
      assert.deepEqual(typed.keys, [key]);

      assert.deepEqual(onceReply(await send(r, 'ONCE.WAIT', k('once:free')), 'WAIT free'), { state: 'free', detail: '' });
      assert.equal(await send(r, 'ONCE.STATUS', k('once:free')), null);
    });

    it('ONCE: waiters are woken by a complete or an abort on another connection', async () => {
      const key = k('once:memo');
      // A blocked command holds its connection: waiters get their own.
      const [runner, w1, w2] = await Promise.all([open(), open(), open()]);
      const { state, detail: token } = onceReply(await send(runner, 'ONCE.CLAIM', key, 'LEASE', 10000), 'CLAIM');
      assert.equal(state, 'claimed');
      const claimWait = track(send(w1, 'ONCE.CLAIM', key, 'WAIT', 10000));
      const wait = track(send(w2, 'ONCE.WAIT', key, 'TIMEOUT', 10000));
      await eventually(5000, 'two waiters in ONCE.STATUS', async () => {
        const st = onceStatus(await send(r, 'ONCE.STATUS', key), statusShape, 'STATUS');
        return [st.waiters === 2, st];
      });
      assert.ok(!claimWait.settled && !wait.settled, 'the waiters returned before the complete');
      assert.equal(await send(runner, 'ONCE.COMPLETE', key, token, 'forty-two', 'KEEP', 60000), 'OK');
      assert.deepEqual(onceReply(await within(claimWait.promise, 3000, 'CLAIM … WAIT'), 'CLAIM … WAIT'),
        { state: 'done', detail: 'forty-two' });
      assert.deepEqual(onceReply(await within(wait.promise, 3000, 'ONCE.WAIT'), 'ONCE.WAIT'),
        { state: 'done', detail: 'forty-two' });

      // An abort wakes the waiter with the message and keeps nothing.
      const key2 = k('once:declined');
      const t2 = onceReply(await send(runner, 'ONCE.CLAIM', key2, 'LEASE', 10000), 'CLAIM').detail;
      const waiter = track(send(w1, 'ONCE.CLAIM', key2, 'WAIT', 10000));
      await eventually(5000, 'a waiter in ONCE.STATUS', async () => {
        const st = onceStatus(await send(r, 'ONCE.STATUS', key2), statusShape, 'STATUS');
        return [st.waiters === 1, st];
      });
      assert.equal(await send(runner, 'ONCE.ABORT', key2, t2, 'card declined'), 'OK');
      assert.deepEqual(onceReply(await within(waiter.promise, 3000, 'CLAIM … WAIT'), 'CLAIM … WAIT'),
        { state: 'failed', detail: 'card declined' });
      const again = onceReply(await send(r, 'ONCE.CLAIM', key2), 'CLAIM after ABORT');
      assert.equal(again.state, 'claimed');
      assert.ok(again.detail > t2, `token ${again.detail} after ${t2}: tokens only grow`);
    });

    it('ONCE in a pipeline and in MULTI', async () => {
      const key = k('once:tx');
      const [claimed, status] = await r.multi()
        .addCommand(['ONCE.CLAIM', key])
        .addCommand(['ONCE.STATUS', key])
        .execAsPipeline();
      const { detail: token } = onceReply(claimed, 'pipelined CLAIM');
      assert.equal(onceStatus(status, statusShape, 'pipelined STATUS').token, token);
      const [ok, replay] = await r.multi()
        .addCommand(['ONCE.COMPLETE', key, String(token), 'in-tx'])
        .addCommand(['ONCE.CLAIM', key])
        .exec();
      assert.equal(ok, 'OK');
      assert.deepEqual(onceReply(replay, 'CLAIM in MULTI'), { state: 'done', detail: 'in-tx' });
    });
  });
}
