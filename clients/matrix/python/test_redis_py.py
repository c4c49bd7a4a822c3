"""redis-py against oncekv: a realistic script.

Connect with a password and a db number, plain commands, a pipeline,
MULTI/EXEC with WATCH, SCAN through scan_iter, and the ONCE commands through
execute_command(): claim -> complete -> replay, waiters woken by a complete
and an abort on another connection, ONCE.STATUS as a flat RESP2 array.

Runs with Debian's python3-redis (apt-get install -y python3-redis) and the
system python3; the Go driver, `go test ./integration -run Matrix`, starts
the server and sets ONCEKV_HOST, ONCEKV_PORT, ONCEKV_PASSWORD and ONCEKV_DB:

    /usr/bin/python3 clients/matrix/python/test_redis_py.py
"""

import concurrent.futures
import os
import sys
import time
import unittest

import redis

STATUS_FIELDS = ["state", "token", "lease-ms", "keep-ms", "waiters", "fingerprint"]


def server():
    need = ["ONCEKV_HOST", "ONCEKV_PORT", "ONCEKV_PASSWORD", "ONCEKV_DB"]
    missing = [k for k in need if not os.environ.get(k)]
    if missing:
        sys.exit(
            "%s not set: this script runs from the Go driver, "
            "`go test ./integration -run Matrix` (it starts the server and sets them)"
            % ", ".join(missing)
        )
    return {
        "host": os.environ["ONCEKV_HOST"],
        "port": int(os.environ["ONCEKV_PORT"]),
        "password": os.environ["ONCEKV_PASSWORD"],
        "db": int(os.environ["ONCEKV_DB"]),
    }


SERVER = None


def setUpModule():
    # The db is this script's own: start it empty, so that the script can
    # run again against the same server.
    c = redis.Redis(**SERVER)
    c.flushdb()
    c.close()


class RedisPyTest(unittest.TestCase):
    def setUp(self):
        self.clients = []
        self.r = self.client()
        # Each test's keys start with its name.
        self.prefix = "redis-py@%s:%s:" % (redis.__version__, self._testMethodName)

    def tearDown(self):
        for c in self.clients:
            c.close()

    def client(self, **extra):
        """A client of the application's configuration: password, db."""
        opts = dict(SERVER, decode_responses=True, socket_connect_timeout=5)
        opts.update(extra)
        c = redis.Redis(**opts)
        self.clients.append(c)
        return c

    def k(self, s):
        return self.prefix + s

    # ONCE reply helpers

    def once_reply(self, reply, what):
        """Checks a [state, detail] reply and returns it as a tuple."""
        self.assertIsInstance(reply, list, "%s: %r" % (what, reply))
        self.assertEqual(len(reply), 2, "%s: %r" % (what, reply))
        state, detail = reply
        if state in ("claimed", "running"):
            self.assertIsInstance(detail, int, "%s: detail of %r is not an integer reply" % (what, reply))
        elif state in ("done", "failed", "free"):
            self.assertIsInstance(detail, str, "%s: detail of %r is not a bulk string" % (what, reply))
        else:
            self.fail("%s: unknown state in %r" % (what, reply))
        return state, detail

    def once_status(self, reply, what):
        """Checks ONCE.STATUS of a running or done key: a flat array of six
        field/value pairs in order (RESP2), returned as a dict."""
        self.assertIsInstance(reply, list, "%s: %r" % (what, reply))
        self.assertEqual(len(reply), 12, "%s: %r" % (what, reply))
        self.assertEqual(reply[0::2], STATUS_FIELDS, "%s: %r" % (what, reply))
        st = dict(zip(reply[0::2], reply[1::2]))
        self.assertIn(st["state"], ("running", "done"), what)
        for f in ("token", "lease-ms", "keep-ms", "waiters"):
            self.assertIsInstance(st[f], int, "%s: %s of %r" % (what, f, reply))
        self.assertTrue(st["fingerprint"] is None or isinstance(st["fingerprint"], str), what)
        return st

    def eventually(self, what, check, timeout=5.0):
        deadline = time.monotonic() + timeout
        last = None
        while True:
            done, last = check()
            if done:
                return
            if time.monotonic() > deadline:
                self.fail("%s: not within %ss; last: %r" % (what, timeout, last))
            time.sleep(0.005)

    def assertError(self, prefix, fn, *args):
        with self.assertRaises(redis.ResponseError) as cm:
            fn(*args)
        self.assertTrue(str(cm.exception).startswith(prefix), "error %r, want %r…" % (str(cm.exception), prefix))

    # The script

    def test_connect_with_password_and_db(self):
        self.assertTrue(self.r.ping())
        hello = self.r.execute_command("HELLO")
        h = dict(zip(hello[0::2], hello[1::2]))
        self.assertEqual(h.get("proto"), 2, "HELLO: %r" % hello)
        info = self.r.client_info()
        self.assertEqual(int(info["db"]), SERVER["db"], info)
        self.assertEqual(info["resp"].strip(), "2", info)
        self.assertEqual(info["user"], "default", info)

        self.assertTrue(self.r.set(self.k("db"), "mine"))
        self.assertIsNone(self.client(db=0).get(self.k("db")), "a key set in db N is not in db 0")
        self.assertEqual(self.r.get(self.k("db")), "mine")

        # (redis-py 4.3 raises WRONGPASS as a plain ResponseError, against
        # Redis too; NOAUTH as an AuthenticationError.)
        self.assertError("WRONGPASS", self.client(password="wrong").ping)
        with self.assertRaises(redis.AuthenticationError) as cm:
            self.client(password=None).get(self.k("db"))
        self.assertIn("Authentication required", str(cm.exception))

    def test_strings_and_expiry(self):
        r, k = self.r, self.k
        self.assertTrue(r.set(k("s"), "hello"))
        self.assertEqual(r.get(k("s")), "hello")
        self.assertIsNone(r.get(k("missing")))
        self.assertEqual(r.incr(k("n")), 1)
        self.assertEqual(r.incrby(k("n"), 41), 42)
        # redis-py strips the ERR prefix.
        self.assertError("value is not an integer or out of range", r.incr, k("s"))
        self.assertEqual(r.mget(k("s"), k("missing"), k("n")), ["hello", None, "42"])
        self.assertTrue(r.set(k("ex"), "v", ex=100))
        self.assertTrue(99 <= r.ttl(k("ex")) <= 100)
        self.assertEqual(r.ttl(k("s")), -1)
        self.assertEqual(r.exists(k("s"), k("missing"), k("n")), 2)
        self.assertEqual(r.delete(k("s"), k("missing")), 1)

    def test_pipeline(self):
        n = 100
        p = self.r.pipeline(transaction=False)
        for i in range(n):
            p.set(self.k("p:%d" % i), "v%d" % i)
            p.incr(self.k("counter"))
            p.get(self.k("p:%d" % i))
        res = p.execute()
        self.assertEqual(len(res), 3 * n)
        for i in range(n):
            self.assertEqual(res[3 * i : 3 * i + 3], [True, i + 1, "v%d" % i], "#%d" % i)

    def test_multi_exec_and_watch(self):
        r, k = self.r, self.k
        p = r.pipeline()  # transaction=True: MULTI … EXEC
        p.set(k("tx"), "10").incr(k("tx")).incrby(k("tx"), 5).get(k("tx"))
        self.assertEqual(p.execute(), [True, 11, 16, "16"])

        # A command that fails at EXEC time fails alone: the others apply.
        p = r.pipeline()
        p.set(k("tx:s"), "text").incr(k("tx:s")).set(k("tx:t"), "applied")
        res = p.execute(raise_on_error=False)
        self.assertEqual(res[0], True)
        self.assertIsInstance(res[1], redis.ResponseError)
        self.assertIn("not an integer", str(res[1]))
        self.assertEqual(res[2], True)
        self.assertEqual(r.get(k("tx:t")), "applied")

        # Optimistic locking, the redis-py way: WATCH, read, MULTI, write,
        # EXEC; another connection changes the key once in between.
        r.set(k("balance"), "100")
        other = self.client()
        attempts = 0
        with r.pipeline() as pipe:
            while True:
                attempts += 1
                try:
                    pipe.watch(k("balance"))
                    balance = int(pipe.get(k("balance")))
                    if attempts == 1:
                        other.set(k("balance"), "50")  # someone else, meanwhile
                    pipe.multi()
                    pipe.set(k("balance"), str(balance - 30))
                    pipe.execute()
                    break
                except redis.WatchError:
                    self.assertEqual(attempts, 1, "EXEC aborted twice")
                    continue
        self.assertEqual(attempts, 2, "the first EXEC should abort: the watched key changed")
        self.assertEqual(r.get(k("balance")), "20")

        # The same with the transaction() helper.
        def debit(pipe):
            balance = int(pipe.get(k("balance")))
            pipe.multi()
            pipe.set(k("balance"), str(balance - 5))

        r.transaction(debit, k("balance"))
        self.assertEqual(r.get(k("balance")), "15")

    def test_scan_iteration(self):
        n = 600
        want = [self.k("scan:%04d" % i) for i in range(n)]
        p = self.r.pipeline(transaction=False)
        for i in range(n):
            j = (i * 7919) % n  # scrambled: SCAN's order must not be the insertion order by accident
            p.set(want[j], str(j))
        p.execute()
        for count in (None, 7, 100, 5000):
            got = list(self.r.scan_iter(match=self.k("scan:*"), count=count))
            self.check_scanned(got, want, "scan_iter count=%s" % count)
        got, cursor = [], 0
        while True:
            cursor, keys = self.r.scan(cursor, match=self.k("scan:00*"), count=10)
            self.assertIsInstance(cursor, int)
            got.extend(keys)
            if cursor == 0:
                break
        self.check_scanned(got, want[:100], "SCAN MATCH loop")

    def check_scanned(self, got, want, what):
        self.assertEqual(len(got), len(set(got)), "%s: duplicates" % what)
        self.assertEqual(set(got), set(want), "%s: keys" % what)
        self.assertEqual(got, sorted(got, key=lambda s: s.encode()), "%s: not in byte order (KV-7)" % what)

    def test_once_claim_complete_replay(self):
        r, k = self.r, self.k
        key = k("charge")
        other = self.client()
        state, token = self.once_reply(
            r.execute_command("ONCE.CLAIM", key, "LEASE", 10000, "FINGERPRINT", "sha256:9f86"), "CLAIM"
        )
        self.assertEqual(state, "claimed")
        self.assertGreater(token, 0)

        st = self.once_status(r.execute_command("ONCE.STATUS", key), "STATUS running")
        self.assertEqual(st["state"], "running")
        self.assertEqual(st["token"], token)
        self.assertTrue(0 < st["lease-ms"] <= 10000, st)
        self.assertEqual(st["waiters"], 0)
        self.assertEqual(st["fingerprint"], "sha256:9f86")

        state, left = self.once_reply(other.execute_command("ONCE.CLAIM", key), "CLAIM while running")
        self.assertEqual(state, "running")
        self.assertTrue(0 < left <= 10000, left)
        self.assertError("MISMATCH", other.execute_command, "ONCE.CLAIM", key, "FINGERPRINT", "sha256:other")
        self.assertError("STALE", r.execute_command, "ONCE.COMPLETE", key, token + 1, "x")
        self.assertTrue(r.execute_command("ONCE.EXTEND", key, token, "LEASE", 20000))

        receipt = '{"receipt":"ch_123"}'
        self.assertTrue(r.execute_command("ONCE.COMPLETE", key, token, receipt, "KEEP", 60000))
        self.assertError("STALE", r.execute_command, "ONCE.COMPLETE", key, token, receipt)

        replay = self.once_reply(
            other.execute_command("ONCE.CLAIM", key, "WAIT", 5000, "FINGERPRINT", "sha256:9f86"), "replay"
        )
        self.assertEqual(replay, ("done", receipt))
        st = self.once_status(other.execute_command("ONCE.STATUS", key), "STATUS done")
        self.assertEqual(st["state"], "done")
        self.assertEqual(st["token"], token)
        self.assertTrue(0 < st["keep-ms"] <= 60000, st)

        self.assertEqual(r.type(key), "once")
        self.assertError("WRONGTYPE", r.get, key)
        self.assertTrue(0 < r.pttl(key) <= 60000)
        _, typed = r.scan(0, match=k("*"), count=1000, _type="once")
        self.assertEqual(typed, [key])

        self.assertEqual(self.once_reply(r.execute_command("ONCE.WAIT", k("free")), "WAIT free"), ("free", ""))
        self.assertIsNone(r.execute_command("ONCE.STATUS", k("free")))

    def test_once_waiters_woken_on_another_connection(self):
        r, k = self.r, self.k
        key = k("memo")
        runner, w1, w2 = self.client(), self.client(), self.client()
        state, token = self.once_reply(runner.execute_command("ONCE.CLAIM", key, "LEASE", 10000), "CLAIM")
        self.assertEqual(state, "claimed")
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            claim_wait = pool.submit(w1.execute_command, "ONCE.CLAIM", key, "WAIT", 10000)
            wait = pool.submit(w2.execute_command, "ONCE.WAIT", key, "TIMEOUT", 10000)

            def waiters(n, key):
                def check():
                    st = self.once_status(r.execute_command("ONCE.STATUS", key), "STATUS")
                    return st["waiters"] == n, st

                return check

            self.eventually("two waiters in ONCE.STATUS", waiters(2, key))
            self.assertFalse(claim_wait.done() or wait.done(), "the waiters returned before the complete")
            self.assertTrue(runner.execute_command("ONCE.COMPLETE", key, token, "forty-two", "KEEP", 60000))
            self.assertEqual(self.once_reply(claim_wait.result(timeout=3), "CLAIM WAIT"), ("done", "forty-two"))
            self.assertEqual(self.once_reply(wait.result(timeout=3), "ONCE.WAIT"), ("done", "forty-two"))

            # An abort wakes the waiter with the message and keeps nothing.
            key2 = k("declined")
            _, t2 = self.once_reply(runner.execute_command("ONCE.CLAIM", key2, "LEASE", 10000), "CLAIM")
            waiter = pool.submit(w1.execute_command, "ONCE.CLAIM", key2, "WAIT", 10000)
            self.eventually("a waiter in ONCE.STATUS", waiters(1, key2))
            self.assertTrue(runner.execute_command("ONCE.ABORT", key2, t2, "card declined"))
            self.assertEqual(self.once_reply(waiter.result(timeout=3), "CLAIM WAIT"), ("failed", "card declined"))
        state, t3 = self.once_reply(r.execute_command("ONCE.CLAIM", key2), "CLAIM after ABORT")
        self.assertEqual(state, "claimed")
        self.assertGreater(t3, t2, "tokens only grow")

    def test_once_in_pipeline_and_multi(self):
        key = self.k("tx")
        p = self.r.pipeline(transaction=False)
        p.execute_command("ONCE.CLAIM", key)
        p.execute_command("ONCE.STATUS", key)
        claimed, status = p.execute()
        _, token = self.once_reply(claimed, "pipelined CLAIM")
        self.assertEqual(self.once_status(status, "pipelined STATUS")["token"], token)
        p = self.r.pipeline()
        p.execute_command("ONCE.COMPLETE", key, token, "in-tx")
        p.execute_command("ONCE.CLAIM", key)
        ok, replay = p.execute()
        self.assertTrue(ok)
        self.assertEqual(self.once_reply(replay, "CLAIM in MULTI"), ("done", "in-tx"))


if __name__ == "__main__":
    SERVER = server()
    unittest.main(verbosity=2)
