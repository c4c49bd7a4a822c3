// The realistic script for ioredis (5 and 6 share their API): connect with a
// password and a db number, plain commands, a pipeline, MULTI/EXEC with
// WATCH, SCAN through scanStream, and the ONCE commands through
// redis.call(): claim → complete → replay, waiters woken by a complete and
// an abort on another connection, and ONCE.STATUS in the connection's shape.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import {
  checkScanned, errorMessage, eventually, onceReply, onceStatus, scanKeys, scrambled, server, track, within,
} from './common.mjs';

// ioredisScript registers the script as a describe block.
//   Redis       the client class (require('ioredis5').default…)
//   name        the block's name, also the key prefix
//   version     the version the client reports (CLIENT SETINFO LIB-VER)
//   options     extra client options (protocol…)
//   dbOffset    added to ONCEKV_DB: each block of a file uses its own db
//   proto       the RESP version the connection must end up speaking
//   statusShape what ONCE.STATUS looks like to the caller (see onceStatus)
export function ioredisScript(Redis, { name, version, options = {}, dbOffset = 0, proto, statusShape }) {
  describe(name, () => {
    const srv = server();
    const db = srv.db + dbOffset;
    const base = { host: srv.host, port: srv.port, password: srv.password, db, ...options };
    const clients = [];
    // open returns a new connection of the same application configuration.
    const open = (extra = {}) => {
      const c = new Redis({ ...base, ...extra });
      c.on('error', () => {}); // errors surface through the commands' promises
      clients.push(c);
      return c;
    };
    const k = (s) => `${name}:${s}`;
    let r;

    before(async () => {
      r = open();
      assert.equal(await r.ping(), 'PONG');
      // The db is this block's own: start it empty, so that the script can
      // run again against the same server.
      assert.equal(await r.flushdb(), 'OK');
    });
    after(async () => {
      await Promise.allSettled(clients.map((c) => (c.status === 'ready' ? c.quit() : c.disconnect())));
    });

    it('connects with a password and a db number', async () => {
      // HELLO without a version reports the protocol the connection speaks.
      const hello = await r.call('HELLO');
      let h = hello;
      if (Array.isArray(hello)) {
        h = {};
        for (let i = 0; i + 1 < hello.length; i += 2) h[hello[i]] = hello[i + 1];
      }
      assert.equal(Array.isArray(hello), statusShape === 'array', `HELLO's shape: ${JSON.stringify(hello)}`);
      assert.equal(h.proto, proto, `HELLO: proto ${h.proto}, want ${proto} (${JSON.stringify(hello)})`);

      const info = await r.client('INFO');
      const fields = info.trim().split(' ');
      for (const want of [`db=${db}`, `resp=${proto}`, 'user=default', 'lib-name=ioredis', `lib-ver=${version}`]) {
        assert.ok(fields.includes(want), `CLIENT INFO ${JSON.stringify(info)}: want ${want}`);
      }

      assert.equal(await r.set(k('db'), 'mine'), 'OK');
      const db0 = open({ db: 0 });
      assert.equal(await db0.get(k('db')), null, 'a key set in db N is not in db 0');
      assert.equal(await r.get(k('db')), 'mine');

      // A wrong password: connect() fails and the 'error' event says why.
      // (disconnectTimeout: ioredis otherwise keeps a 2 s timer after the
      // failed handshake, against Redis too, delaying the process's exit.)
      const wrong = new Redis({
        ...base, password: 'wrong', lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0, disconnectTimeout: 10,
      });
      const errors = [];
      wrong.on('error', (e) => errors.push(errorMessage(e)));
      try {
        await assert.rejects(wrong.connect());
      } finally {
        wrong.disconnect();
      }
      assert.ok(errors.some((e) => e.startsWith('WRONGPASS')), `errors ${JSON.stringify(errors)}: want WRONGPASS`);
    });

    it('strings and expiry', async () => {
      assert.equal(await r.set(k('s'), 'hello'), 'OK');
      assert.equal(await r.get(k('s')), 'hello');
      assert.equal(await r.get(k('missing')), null);
      assert.equal(await r.incr(k('n')), 1);
      assert.equal(await r.incrby(k('n'), 41), 42);
      await assert.rejects(r.incr(k('s')), (e) => errorMessage(e) === 'ERR value is not an integer or out of range');
      assert.deepEqual(await r.mget(k('s'), k('missing'), k('n')), ['hello', null, '42']);
      assert.equal(await r.set(k('ex'), 'v', 'EX', 100), 'OK');
      const ttl = await r.ttl(k('ex'));
      assert.ok(ttl >= 99 && ttl <= 100, `TTL ${ttl}`);
      assert.equal(await r.ttl(k('s')), -1);
      assert.equal(await r.exists(k('s'), k('missing'), k('n')), 2);
      assert.equal(await r.del(k('s'), k('missing')), 1);
    });

    it('pipeline', async () => {
      const n = 100;
      const p = r.pipeline();
      for (let i = 0; i < n; i++) {
        p.set(k(`p:${i}`), `v${i}`);
        p.incr(k('p:counter'));
        p.get(k(`p:${i}`));
      }
      const res = await p.exec();
      assert.equal(res.length, 3 * n);
      for (let i = 0; i < n; i++) {
        assert.deepEqual(res[3 * i], [null, 'OK'], `SET #${i}`);
        assert.deepEqual(res[3 * i + 1], [null, i + 1], `INCR #${i}`);
        assert.deepEqual(res[3 * i + 2], [null, `v${i}`], `GET #${i}`);
      }
    });

    it('MULTI/EXEC and WATCH', async () => {
      const res = await r.multi().set(k('tx'), '10').incr(k('tx')).incrby(k('tx'), 5).get(k('tx')).exec();
      assert.deepEqual(res, [[null, 'OK'], [null, 11], [null, 16], [null, '16']]);

      // A command that fails at EXEC time fails alone.
      const mixed = await r.multi().set(k('tx:s'), 'text').incr(k('tx:s')).set(k('tx:t'), 'applied').exec();
      assert.equal(mixed.length, 3);
      assert.deepEqual(mixed[0], [null, 'OK']);
      assert.match(errorMessage(mixed[1][0]), /^ERR value is not an integer/);
      assert.deepEqual(mixed[2], [null, 'OK']);
      assert.equal(await r.get(k('tx:t')), 'applied');

      // Optimistic locking: another connection changes a watched key.
      const w = open();
      await w.set(k('balance'), '100');
      assert.equal(await w.watch(k('balance')), 'OK');
      const seen = Number(await w.get(k('balance')));
      await r.set(k('balance'), '50'); // someone else, meanwhile
      assert.equal(await w.multi().set(k('balance'), String(seen - 30)).exec(), null, 'EXEC after a watched key changed');
      assert.equal(await r.get(k('balance')), '50');
      // Retried, it goes through.
      await w.watch(k('balance'));
      const now = Number(await w.get(k('balance')));
      assert.deepEqual(await w.multi().set(k('balance'), String(now - 30)).exec(), [[null, 'OK']]);
      assert.equal(await r.get(k('balance')), '20');
    });

    it('SCAN iteration', async () => {
      const n = 600;
      const want = scanKeys(k('scan:'), n);
      const p = r.pipeline();
      for (const i of scrambled(n)) p.set(want[i], String(i));
      for (const [err] of await p.exec()) assert.equal(err, null);

      for (const count of [undefined, 7, 100, 5000]) {
        const got = [];
        const stream = r.scanStream({ match: k('scan:*'), ...(count ? { count } : {}) });
        for await (const batch of stream) got.push(...batch);
        checkScanned(got, want, `scanStream COUNT ${count ?? 'default'}`);
      }
      // The cursor loop by hand.
      const got = [];
      let cursor = '0';
      do {
        const [next, keys] = await r.scan(cursor, 'MATCH', k('scan:00*'), 'COUNT', 10);
        assert.equal(typeof next, 'string');
        got.push(...keys);
        cursor = next;
      } while (cursor !== '0');
      checkScanned(got, want.slice(0, 100), 'SCAN MATCH loop');
    });

    it('ONCE: claim, complete, replay', async () => {
      const key = k('once:charge');
      const other = open();
      const c = onceReply(await r.call('ONCE.CLAIM', key, 'LEASE', 10000, 'FINGERPRINT', 'sha256:9f86'), 'CLAIM');
      assert.equal(c.state, 'claimed');
      assert.ok(c.detail > 0, `token ${c.detail}`);
      const token = c.detail;

      let st = onceStatus(await r.call('ONCE.STATUS', key), statusShape, 'STATUS running');
      assert.equal(st.state, 'running');
      assert.equal(st.token, token);
      assert.ok(st['lease-ms'] > 0 && st['lease-ms'] <= 10000, `lease-ms ${st['lease-ms']}`);
      assert.equal(st.waiters, 0);
      assert.equal(st.fingerprint, 'sha256:9f86');

      const busy = onceReply(await other.call('ONCE.CLAIM', key), 'CLAIM while running');
      assert.equal(busy.state, 'running');
      assert.ok(busy.detail > 0 && busy.detail <= 10000, `ms left ${busy.detail}`);
      await assert.rejects(other.call('ONCE.CLAIM', key, 'FINGERPRINT', 'sha256:other'),
        (e) => errorMessage(e).startsWith('MISMATCH'));
      await assert.rejects(r.call('ONCE.COMPLETE', key, token + 1, 'x'), (e) => errorMessage(e).startsWith('STALE'));
      assert.equal(await r.call('ONCE.EXTEND', key, token, 'LEASE', 20000), 'OK');

      const receipt = '{"receipt":"ch_123"}';
      assert.equal(await r.call('ONCE.COMPLETE', key, token, receipt, 'KEEP', 60000), 'OK');
      await assert.rejects(r.call('ONCE.COMPLETE', key, token, receipt), (e) => errorMessage(e).startsWith('STALE'));

      const replay = onceReply(await other.call('ONCE.CLAIM', key, 'WAIT', 5000, 'FINGERPRINT', 'sha256:9f86'), 'replay');
      assert.deepEqual(replay, { state: 'done', detail: receipt });
      st = onceStatus(await other.call('ONCE.STATUS', key), statusShape, 'STATUS done');
      assert.equal(st.state, 'done');
      assert.equal(st.token, token);
      assert.ok(st['keep-ms'] > 0 && st['keep-ms'] <= 60000, `keep-ms ${st['keep-ms']}`);

      assert.equal(await r.type(key), 'once');
      await assert.rejects(r.get(key), (e) => errorMessage(e).startsWith('WRONGTYPE'));
      const ttl = await r.pttl(key);
      assert.ok(ttl > 0 && ttl <= 60000, `PTTL ${ttl}`);
      const [, typed] = await r.scan('0', 'MATCH', k('once:*'), 'COUNT', 1000, 'TYPE', 'once');
      assert.deepEqual(typed, [key]);

      assert.deepEqual(onceReply(await r.call('ONCE.WAIT', k('once:free')), 'WAIT free'), { state: 'free', detail: '' });
      assert.equal(await r.call('ONCE.STATUS', k('once:free')), null);
    });

    it('ONCE: waiters are woken by a complete or an abort on another connection', async () => {
      const key = k('once:memo');
      const runner = open();
      const w1 = open();
      const w2 = open();
      const { state, detail: token } = onceReply(await runner.call('ONCE.CLAIM', key, 'LEASE', 10000), 'CLAIM');
      assert.equal(state, 'claimed');
      const claimWait = track(w1.call('ONCE.CLAIM', key, 'WAIT', 10000));
      const wait = track(w2.call('ONCE.WAIT', key, 'TIMEOUT', 10000));
      await eventually(5000, 'two waiters in ONCE.STATUS', async () => {
        const st = onceStatus(await r.call('ONCE.STATUS', key), statusShape, 'STATUS');
        return [st.waiters === 2, st];
      });
      assert.ok(!claimWait.settled && !wait.settled, 'the waiters returned before the complete');
      assert.equal(await runner.call('ONCE.COMPLETE', key, token, 'forty-two', 'KEEP', 60000), 'OK');
      assert.deepEqual(onceReply(await within(claimWait.promise, 3000, 'CLAIM … WAIT'), 'CLAIM … WAIT'),
        { state: 'done', detail: 'forty-two' });
      assert.deepEqual(onceReply(await within(wait.promise, 3000, 'ONCE.WAIT'), 'ONCE.WAIT'),
        { state: 'done', detail: 'forty-two' });

      // An abort wakes the waiter with the message and keeps nothing.
      const key2 = k('once:declined');
      const t2 = onceReply(await runner.call('ONCE.CLAIM', key2, 'LEASE', 10000), 'CLAIM').detail;
      const waiter = track(w1.call('ONCE.CLAIM', key2, 'WAIT', 10000));
      await eventually(5000, 'a waiter in ONCE.STATUS', async () => {
        const st = onceStatus(await r.call('ONCE.STATUS', key2), statusShape, 'STATUS');
        return [st.waiters === 1, st];
      });
      assert.equal(await runner.call('ONCE.ABORT', key2, t2, 'card declined'), 'OK');
      assert.deepEqual(onceReply(await within(waiter.promise, 3000, 'CLAIM … WAIT'), 'CLAIM … WAIT'),
        { state: 'failed', detail: 'card declined' });
      const again = onceReply(await r.call('ONCE.CLAIM', key2), 'CLAIM after ABORT');
      assert.equal(again.state, 'claimed');
      assert.ok(again.detail > t2, `token ${again.detail} after ${t2}: tokens only grow`);
    });

    it('ONCE in a pipeline and in MULTI', async () => {
      const key = k('once:tx');
      const [[e1, claimed], [e2, status]] = await r.pipeline().call('ONCE.CLAIM', key).call('ONCE.STATUS', key).exec();
      assert.equal(e1, null);
      assert.equal(e2, null);
      const { detail: token } = onceReply(claimed, 'pipelined CLAIM');
      assert.equal(onceStatus(status, statusShape, 'pipelined STATUS').token, token);
      const res = await r.multi().call('ONCE.COMPLETE', key, token, 'in-tx').call('ONCE.CLAIM', key).exec();
      assert.deepEqual(res[0], [null, 'OK']);
      assert.equal(res[1][0], null);
      assert.deepEqual(onceReply(res[1][1], 'CLAIM in MULTI'), { state: 'done', detail: 'in-tx' });
    });
  });
}
