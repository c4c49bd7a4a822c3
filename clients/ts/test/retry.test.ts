// retry: a ONCE.CLAIM answered with a reply that says it did not run and
// may be sent again (TRYAGAIN while proxy mode moves a slot, LOADING,
// MASTERDOWN, CLUSTERDOWN) is sent again, paced and bounded, as go-redis
// does for the Go client. The server here is a fake that speaks just
// enough RESP: a real oncekv answers TRYAGAIN only in proxy mode in front
// of a Redis Cluster whose slot is moving.
import { after, test } from 'node:test'
import assert from 'node:assert/strict'
import net from 'node:net'
import { Redis } from 'ioredis'
import { Store } from '../src/index.js'
import { sleep } from './helpers.js'

/** FakeServer answers ONCE.CLAIM with claim(n) (n counts the claims from 1), everything else +OK. */
interface FakeServer {
  port: number
  /** The commands received, lower-cased name first. */
  commands: string[][]
  claims(): number
}

const servers: net.Server[] = []
const clients: Redis[] = []
const stores: Store[] = []

after(async () => {
  await Promise.all(stores.map((s) => s.close()))
  for (const r of clients) r.disconnect()
  await Promise.all(servers.map((s) => new Promise<void>((r) => s.close(() => r()))))
})

async function fakeServer(claim: (n: number) => string): Promise<FakeServer> {
  const commands: string[][] = []
  let claims = 0
  const server = net.createServer((sock) => {
    let buf = Buffer.alloc(0)
    sock.on('error', () => {})
    sock.on('data', (chunk) => {
      buf = Buffer.concat([buf, chunk])
      for (;;) {
        const parsed = parseCommand(buf)
        if (parsed === undefined) return
        buf = buf.subarray(parsed.used)
        const args = parsed.args
        const name = args[0].toLowerCase()
        commands.push([name, ...args.slice(1)])
        if (name === 'once.claim') sock.write(claim(++claims))
        else if (name === 'info') sock.write(bulk('# Server\r\nloading:0\r\n'))
        else sock.write('+OK\r\n')
      }
    })
  })
  servers.push(server)
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()))
  const port = (server.address() as net.AddressInfo).port
  return { port, commands, claims: () => claims }
}

/** parseCommand reads one RESP array of bulk strings from buf, or undefined when it is not all there. */
function parseCommand(buf: Buffer): { args: string[]; used: number } | undefined {
  let pos = 0
  const line = (): string | undefined => {
    const end = buf.indexOf('\r\n', pos)
    if (end < 0) return undefined
    const s = buf.subarray(pos, end).toString()
    pos = end + 2
    return s
  }
  const head = line()
  if (head === undefined) return undefined
  assert.match(head, /^\*\d+$/, 'the client sends arrays')
  const args: string[] = []
  for (let n = Number(head.slice(1)); n > 0; n--) {
    const len = line()
    if (len === undefined) return undefined
    const size = Number(len.slice(1))
    if (buf.length < pos + size + 2) return undefined
    args.push(buf.subarray(pos, pos + size).toString())
    pos += size + 2
  }
  return { args, used: pos }
}

function bulk(s: string): string {
  return `$${Buffer.byteLength(s)}\r\n${s}\r\n`
}

const CLAIMED = '*2\r\n$7\r\nclaimed\r\n:7\r\n'

function fakeStore(port: number, retryFor?: number): Store {
  const r = new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 1 })
  r.on('error', () => {})
  clients.push(r)
  const s = new Store(r)
  if (retryFor !== undefined) s._retryFor = retryFor
  stores.push(s)
  return s
}

test('a claim answered TRYAGAIN, LOADING, MASTERDOWN, CLUSTERDOWN or READONLY is sent again until it runs', async () => {
  const TRYAGAIN = '-TRYAGAIN the slot of the key is moving, try again\r\n'
  const RUNNING = '*2\r\n$7\r\nrunning\r\n:100\r\n'
  // replies: the claims' replies in order, then CLAIMED; wait: which of
  // the claims are sent with WAIT (on a wait connection).
  const cases = [
    { name: 'TRYAGAIN (proxy mode, a slot moving)', replies: [TRYAGAIN, TRYAGAIN, TRYAGAIN, TRYAGAIN], wait: [false, false, false, false, false] },
    { name: 'LOADING', replies: ['-LOADING Redis is loading the dataset in memory\r\n', '-LOADING Redis is loading the dataset in memory\r\n'], wait: [false, false, false] },
    { name: 'MASTERDOWN', replies: ['-MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to no\r\n', '-MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to no\r\n'], wait: [false, false, false] },
    { name: 'CLUSTERDOWN', replies: ['-CLUSTERDOWN The cluster is down\r\n', '-CLUSTERDOWN The cluster is down\r\n'], wait: [false, false, false] },
    { name: 'READONLY (a failover, as go-redis resends it)', replies: ["-READONLY You can't write against a read only replica.\r\n"], wait: [false, false] },
    { name: 'TRYAGAIN to a CLAIM … WAIT', replies: [RUNNING, TRYAGAIN, TRYAGAIN], wait: [false, true, true, true] },
  ]
  for (const c of cases) {
    const srv = await fakeServer((n) => c.replies[n - 1] ?? CLAIMED)
    const o = fakeStore(srv.port).once<string>('retry')
    let calls = 0
    const t0 = Date.now()
    const info = await o.runInfo('k', () => {
      calls++
      return 'ran'
    })
    assert.deepEqual(info, { value: 'ran', replayed: false, token: 7 }, c.name)
    assert.equal(calls, 1, `${c.name}: fn ran once`)
    const refused = c.replies.filter((r) => r !== RUNNING).length
    assert.equal(srv.claims(), c.replies.length + 1, `${c.name}: the claim was sent again after each refusal`)
    // Paced: pauses of 10, 20, 40 … ms between the tries (a Node.js timer
    // may fire up to 1 ms early).
    assert.ok(Date.now() - t0 >= 10 * (2 ** refused - 1) - refused, `${c.name}: the retries were paced`)
    const claimsSent = srv.commands.filter((a) => a[0] === 'once.claim')
    assert.deepEqual(
      claimsSent,
      c.wait.map((w) => ['once.claim', 'retry:k', 'lease', '30000', ...(w ? ['wait', '5000'] : [])]),
      `${c.name}: the same claim again`,
    )
    assert.ok(srv.commands.some((a) => a[0] === 'once.complete' && a[1] === 'retry:k' && a[2] === '7'), `${c.name}: the answer was stored`)
  }
})

test('a claim answered TRYAGAIN for longer than the retries last fails with the last reply', async () => {
  const srv = await fakeServer((n) => `-TRYAGAIN still moving (${n})\r\n`)
  const o = fakeStore(srv.port, 300).once<string>('retry')
  const t0 = Date.now()
  await assert.rejects(
    o.run('k', () => assert.fail('fn ran without a claim')),
    (e: Error) => e.name === 'ReplyError' && e.message === `TRYAGAIN still moving (${srv.claims()})`,
  )
  const took = Date.now() - t0
  // 10 + 20 + 40 + 80 ms of pauses, then 160 would end past 300 ms: 5
  // tries, and the last reply is the error.
  assert.ok(took >= 146 && took < 2_000, `gave up after ${took} ms, want after the pauses that fit in 300 ms`)
  assert.ok(srv.claims() >= 3 && srv.claims() <= 6, `${srv.claims()} claims sent: want paced tries, not a busy loop`)
})

test('a caller whose signal aborts while its claim is retried rejects at once, and the retries stop', async () => {
  const srv = await fakeServer(() => '-TRYAGAIN still moving\r\n')
  const o = fakeStore(srv.port, 60_000).once<string>('retry')
  const ac = new AbortController()
  const p = o.run('k', () => assert.fail('fn ran without a claim'), { signal: ac.signal })
  await sleep(100)
  assert.ok(srv.claims() >= 2, 'the claim was sent again')
  const reason = new Error('caller gave up')
  ac.abort(reason)
  await assert.rejects(p, (e) => e === reason)
  await sleep(300) // the pause under way ends at most 200 ms later
  const n = srv.claims()
  await sleep(500)
  assert.equal(srv.claims(), n, 'no claim is sent for a flight no caller is left in')
})

test('a claim answered with an error that is no "send again" fails at once', async () => {
  for (const reply of ['-ERR unknown command\r\n', '-READONLYX not a retryable reply\r\n', '-NOAUTH Authentication required.\r\n']) {
    const srv = await fakeServer(() => reply)
    const o = fakeStore(srv.port).once<string>('retry')
    await assert.rejects(
      o.run('k', () => assert.fail('fn ran without a claim')),
      (e: Error) => e.name === 'ReplyError' && e.message === reply.slice(1, -2),
    )
    assert.equal(srv.claims(), 1, `${reply.trim()}: sent once`)
  }
})
