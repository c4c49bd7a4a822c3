package integration

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oncekv/oncekv/internal/testredis"
)

// Every command, in every place a client can put it, must leave its own
// connection and every other one served (KV-1: one client never stalls the
// others). A connection keeps the keyspace lock across its pipeline
// (commands/local.go), and EXEC runs its commands in one transaction: a
// command that took the lock again under either would hang its client
// and then everyone (INFO inside EXEC did, until edbd2e8). This test runs
// each command of COMMAND LIST alone, inside pipelines short and longer
// than a hold lasts, and inside MULTI (with and without WATCH), while two
// other clients write all the time, and checks after each that the
// connection answers to the end and that another client still can.

// liveSteps are realistic invocations of every command and subcommand,
// by COMMAND LIST's name. Commands are separated by ";"; {k} is a key of
// the invocation's own, {tok} the token of the last "claimed" reply of
// the setup. TestEveryCommandLeavesTheServerLive fails on a command
// missing here.
var liveSteps = map[string][]string{
	// Sorted sets.
	"zadd":                    {"ZADD {k} 1 a 2 b", "ZADD {k} NX CH 3 c ; ZADD {k} INCR 1.5 a"},
	"zincrby":                 {"ZINCRBY {k} 2.5 m ; ZINCRBY {k} -1 m"},
	"zrem":                    {"ZADD {k} 1 a 2 b ; ZREM {k} a x"},
	"zcard":                   {"ZADD {k} 1 a ; ZCARD {k}"},
	"zscore":                  {"ZADD {k} 0.1 a ; ZSCORE {k} a"},
	"zmscore":                 {"ZADD {k} 1 a ; ZMSCORE {k} a b"},
	"zrank":                   {"ZADD {k} 1 a 2 b ; ZRANK {k} b"},
	"zrevrank":                {"ZADD {k} 1 a 2 b ; ZREVRANK {k} b"},
	"zcount":                  {"ZADD {k} 1 a 2 b ; ZCOUNT {k} (1 +inf"},
	"zlexcount":               {"ZADD {k} 0 a 0 b ; ZLEXCOUNT {k} [a (c"},
	"zrange":                  {"ZADD {k} 1 a 2 b 3 c ; ZRANGE {k} 0 -1 WITHSCORES ; ZRANGE {k} (1 +inf BYSCORE LIMIT 0 1"},
	"zrangestore":             {"ZADD {k} 1 a 2 b ; ZRANGESTORE {k}:dst {k} 0 -1"},
	"zrevrange":               {"ZADD {k} 1 a 2 b ; ZREVRANGE {k} 0 0 WITHSCORES"},
	"zrangebyscore":           {"ZADD {k} 1 a 2 b ; ZRANGEBYSCORE {k} -inf 1"},
	"zrevrangebyscore":        {"ZADD {k} 1 a 2 b ; ZREVRANGEBYSCORE {k} +inf (1"},
	"zrangebylex":             {"ZADD {k} 0 a 0 b ; ZRANGEBYLEX {k} - +"},
	"zrevrangebylex":          {"ZADD {k} 0 a 0 b ; ZREVRANGEBYLEX {k} + [a"},
	"zremrangebyrank":         {"ZADD {k} 1 a 2 b ; ZREMRANGEBYRANK {k} 0 0"},
	"zremrangebyscore":        {"ZADD {k} 1 a 2 b ; ZREMRANGEBYSCORE {k} -inf 1"},
	"zremrangebylex":          {"ZADD {k} 0 a 0 b ; ZREMRANGEBYLEX {k} [a [a"},
	"zpopmin":                 {"ZADD {k} 1 a 2 b ; ZPOPMIN {k}", "ZPOPMIN {k} 2"},
	"zpopmax":                 {"ZADD {k} 1 a 2 b ; ZPOPMAX {k} 5"},
	"zmpop":                   {"ZADD {k} 1 a ; ZMPOP 2 {k}:none {k} MIN COUNT 2"},
	"zrandmember":             {"ZADD {k} 1 a 2 b ; ZRANDMEMBER {k} -5 WITHSCORES"},
	"zunion":                  {"ZADD {k} 1 a ; ZUNION 2 {k} {k}:b WEIGHTS 2 1 WITHSCORES"},
	"zinter":                  {"ZADD {k} 1 a ; ZINTER 1 {k} AGGREGATE MAX"},
	"zdiff":                   {"ZADD {k} 1 a ; ZDIFF 2 {k} {k}:b WITHSCORES"},
	"zunionstore":             {"ZADD {k} 1 a ; ZUNIONSTORE {k}:d 1 {k}"},
	"zinterstore":             {"ZADD {k} 1 a ; ZINTERSTORE {k}:d 1 {k} WEIGHTS 3"},
	"zdiffstore":              {"ZADD {k} 1 a ; ZDIFFSTORE {k}:d 1 {k}"},
	"zintercard":              {"ZADD {k} 1 a ; ZINTERCARD 1 {k} LIMIT 1"},
	"zscan":                   {"ZADD {k} 1 a 2 b ; ZSCAN {k} 0 MATCH * COUNT 10"},
	"bzpopmin":                {"ZADD {k} 1 a ; BZPOPMIN {k}:none {k} 1", "BZPOPMIN {k} 0.05"},
	"bzpopmax":                {"BZPOPMAX {k} 0.05", "ZADD {k} 1 a ; BZPOPMAX {k} 0"},
	"bzmpop":                  {"BZMPOP 0.05 2 {k} {k}:b MAX COUNT 2", "ZADD {k}:b 1 a ; BZMPOP 1 2 {k} {k}:b MIN"},
	"append":                  {"APPEND {k} abc"},
	"auth":                    {"AUTH nopass", "AUTH default nopass"},
	"backup":                  {"BACKUP live.bak"},
	"bgrewriteaof":            {"BGREWRITEAOF"},
	"bgsave":                  {"BGSAVE"},
	"client":                  {"CLIENT"},
	"client|getname":          {"CLIENT GETNAME"},
	"client|help":             {"CLIENT HELP"},
	"client|id":               {"CLIENT ID"},
	"client|info":             {"CLIENT INFO"},
	"client|kill":             {"CLIENT KILL ID 999999999", "CLIENT KILL ADDR 192.0.2.1:9"},
	"client|list":             {"CLIENT LIST", "CLIENT LIST TYPE normal"},
	"client|no-evict":         {"CLIENT NO-EVICT on ; CLIENT NO-EVICT off"},
	"client|pause":            {"CLIENT PAUSE 20 WRITE ; GET {k} ; SET {k} 1", "CLIENT PAUSE 10 ; GET {k}"},
	"client|unpause":          {"CLIENT PAUSE 5000 WRITE ; CLIENT UNPAUSE ; SET {k} 1", "CLIENT UNPAUSE"},
	"client|unblock":          {"CLIENT UNBLOCK 999999999", "CLIENT UNBLOCK 999999999 ERROR"},
	"client|no-touch":         {"CLIENT NO-TOUCH on ; GET {k} ; CLIENT NO-TOUCH off"},
	"client|reply":            {"CLIENT REPLY OFF ; SET {k} 1 ; CLIENT REPLY ON", "CLIENT REPLY SKIP ; SET {k} 2 ; GET {k}"},
	"client|setinfo":          {"CLIENT SETINFO LIB-NAME live"},
	"client|setname":          {"CLIENT SETNAME live"},
	"command":                 {"COMMAND"},
	"eval":                    {"EVAL return(redis.call('INCR',KEYS[1])) 1 {k}", "EVAL return(redis.pcall('SET',KEYS[1])) 1 {k}"},
	"evalsha":                 {"SCRIPT LOAD return(redis.call('GET',KEYS[1])) ; EVALSHA bfef805d9dcd9d3857da9372933ef22c17736f58 1 {k}"},
	"eval_ro":                 {"EVAL_RO return(redis.call('GET',KEYS[1])) 1 {k}"},
	"evalsha_ro":              {"SCRIPT LOAD return(redis.call('GET',KEYS[1])) ; EVALSHA_RO bfef805d9dcd9d3857da9372933ef22c17736f58 1 {k}"},
	"script":                  {"SCRIPT"},
	"script|debug":            {"SCRIPT DEBUG NO"},
	"script|exists":           {"SCRIPT EXISTS bfef805d9dcd9d3857da9372933ef22c17736f58 ffffffffffffffffffffffffffffffffffffffff"},
	"script|flush":            {"SCRIPT FLUSH", "SCRIPT FLUSH ASYNC"},
	"script|help":             {"SCRIPT HELP"},
	"script|kill":             {"SCRIPT KILL"},
	"script|load":             {"SCRIPT LOAD return(ARGV[1])"},
	"command|count":           {"COMMAND COUNT"},
	"command|docs":            {"COMMAND DOCS get once.claim"},
	"command|getkeys":         {"COMMAND GETKEYS SET a b"},
	"command|getkeysandflags": {"COMMAND GETKEYSANDFLAGS MSET a b c d"},
	"command|help":            {"COMMAND HELP"},
	"command|info":            {"COMMAND INFO get once.claim"},
	"command|list":            {"COMMAND LIST FILTERBY PATTERN g*"},
	"config":                  {"CONFIG"},
	"config|get":              {"CONFIG GET *"},
	"config|help":             {"CONFIG HELP"},
	"config|resetstat":        {"CONFIG RESETSTAT"},
	"config|rewrite":          {"CONFIG REWRITE"},
	"config|set":              {"CONFIG SET slowlog-log-slower-than 10000"},
	"dbsize":                  {"DBSIZE"},
	"lpush":                   {"LPUSH {k} a b c ; LPOP {k} 2"},
	"rpush":                   {"RPUSH {k} a b ; RPOP {k}"},
	"lpushx":                  {"LPUSHX {k} a ; RPUSH {k} b ; LPUSHX {k} c"},
	"rpushx":                  {"RPUSHX {k} a ; LPUSH {k} b ; RPUSHX {k} c"},
	"lpop":                    {"RPUSH {k} a b c ; LPOP {k} ; LPOP {k} 5"},
	"rpop":                    {"RPUSH {k} a b c ; RPOP {k} ; RPOP {k} 5"},
	"llen":                    {"RPUSH {k} a ; LLEN {k}"},
	"lrange":                  {"RPUSH {k} a b c ; LRANGE {k} 0 -1"},
	"lindex":                  {"RPUSH {k} a b ; LINDEX {k} -1"},
	"lset":                    {"RPUSH {k} a ; LSET {k} 0 b"},
	"linsert":                 {"RPUSH {k} a ; LINSERT {k} BEFORE a z"},
	"lrem":                    {"RPUSH {k} a b a ; LREM {k} 0 a"},
	"ltrim":                   {"RPUSH {k} a b c d ; LTRIM {k} 0 99 ; LTRIM {k} 1 -2"},
	"lpos":                    {"RPUSH {k} a b a ; LPOS {k} a RANK -1 COUNT 0 MAXLEN 10"},
	"lmove":                   {"RPUSH {k} a b ; LMOVE {k} {k}:dst LEFT RIGHT"},
	"rpoplpush":               {"RPUSH {k} a b ; RPOPLPUSH {k} {k}"},
	"lmpop":                   {"RPUSH {k} a b ; LMPOP 2 nokey {k} RIGHT COUNT 2"},
	"blpop":                   {"RPUSH {k} job ; BLPOP nokey {k} 0", "BLPOP {k} 0.01"},
	"brpop":                   {"RPUSH {k} job ; BRPOP {k} 1", "BRPOP {k} 0.01"},
	"blmove":                  {"RPUSH {k} job ; BLMOVE {k} {k}:dst RIGHT LEFT 0", "BLMOVE {k} {k}:dst LEFT LEFT 0.01"},
	"brpoplpush":              {"RPUSH {k} job ; BRPOPLPUSH {k} {k}:dst 0", "BRPOPLPUSH {k} {k}:dst 0.01"},
	"blmpop":                  {"RPUSH {k} a b ; BLMPOP 0 1 {k} LEFT COUNT 2", "BLMPOP 0.01 1 {k} RIGHT"},
	"dump":                    {"SET {k} abc ; DUMP {k}", "DUMP nokey"},
	"decr":                    {"DECR {k}"},
	"decrby":                  {"DECRBY {k} 3"},
	"del":                     {"SET {k} 1 ; DEL {k} nokey"},
	"discard":                 {"DISCARD", "MULTI ; SET {k} 1 ; DISCARD"},
	"echo":                    {"ECHO hi"},
	"exec":                    {"EXEC", "MULTI ; INCR {k} ; INFO keyspace ; EXEC"},
	"exists":                  {"EXISTS {k} nokey"},
	"expire":                  {"SET {k} 1 ; EXPIRE {k} 100 ; EXPIRE {k} 200 GT"},
	"expireat":                {"SET {k} 1 ; EXPIREAT {k} 1"},
	"expiretime":              {"EXPIRETIME {k}"},
	"hdel":                    {"HSET {k} a 1 b 2 ; HDEL {k} a nofield", "HSET {k} a 1 ; HDEL {k} a"},
	"hexists":                 {"HSET {k} a 1 ; HEXISTS {k} a ; HEXISTS {k} b"},
	"hget":                    {"HSET {k} a 1 ; HGET {k} a ; HGET {k} b"},
	"hgetall":                 {"HSET {k} a 1 b 2 ; HGETALL {k}", "HGETALL nokey"},
	"hincrby":                 {"HINCRBY {k} n 5 ; HINCRBY {k} n -2"},
	"hincrbyfloat":            {"HINCRBYFLOAT {k} f 1.5 ; HINCRBYFLOAT {k} f 2e3"},
	"hkeys":                   {"HSET {k} a 1 b 2 ; HKEYS {k}"},
	"hlen":                    {"HSET {k} a 1 ; HLEN {k}"},
	"hmget":                   {"HSET {k} a 1 ; HMGET {k} a b"},
	"hmset":                   {"HMSET {k} a 1 b 2"},
	"hrandfield":              {"HSET {k} a 1 b 2 c 3 ; HRANDFIELD {k} ; HRANDFIELD {k} -5 WITHVALUES ; HRANDFIELD {k} 2"},
	"hscan":                   {"HSET {k} a 1 b 2 ; HSCAN {k} 0 MATCH a* COUNT 10"},
	"hset":                    {"HSET {k} a 1 b 2 ; HSET {k} a 3"},
	"hsetnx":                  {"HSETNX {k} a 1 ; HSETNX {k} a 2"},
	"hstrlen":                 {"HSET {k} a hello ; HSTRLEN {k} a"},
	"hvals":                   {"HSET {k} a 1 b 2 ; HVALS {k}"},
	"flushall":                {"FLUSHALL", "FLUSHALL ASYNC"},
	"flushdb":                 {"SET {k} 1 ; FLUSHDB SYNC"},
	"get":                     {"GET {k}"},
	"getdel":                  {"SET {k} 1 ; GETDEL {k}"},
	"getex":                   {"SET {k} 1 ; GETEX {k} PX 100000 ; GETEX {k} PERSIST"},
	"getrange":                {"SET {k} abcdef ; GETRANGE {k} 1 -2"},
	"getset":                  {"GETSET {k} v"},
	"hello":                   {"HELLO 3 ; GET {k} ; HELLO 2", "HELLO 3 SETNAME live"},
	"incr":                    {"INCR {k}"},
	"incrby":                  {"INCRBY {k} 7"},
	"incrbyfloat":             {"INCRBYFLOAT {k} 1.5"},
	"info":                    {"INFO", "INFO everything", "INFO keyspace", "INFO once", "INFO commandstats stats"},
	"keys":                    {"KEYS *"},
	"lastsave":                {"LASTSAVE"},
	"mget":                    {"MGET {k} nokey"},
	"mset":                    {"MSET {k} 1 {k}:b 2"},
	"msetnx":                  {"MSETNX {k} 1 {k}:b 2"},
	"multi":                   {"MULTI ; SET {k} 1 ; GET {k} ; EXEC"},
	"once.abort":              {"ONCE.ABORT {k} {tok} gave-up", "ONCE.ABORT {k} 999999 stale"},
	"once.claim":              {"ONCE.CLAIM {k} LEASE 1000", "ONCE.CLAIM {k} ; ONCE.CLAIM {k} WAIT 20 FINGERPRINT f", "ONCE.CLAIM {k} WAIT 20"},
	"once.complete":           {"ONCE.COMPLETE {k} {tok} answer KEEP 100000 ; ONCE.CLAIM {k} WAIT 20", "ONCE.COMPLETE {k} 999999 stale"},
	"once.extend":             {"ONCE.EXTEND {k} {tok} LEASE 5000", "ONCE.EXTEND {k} {tok} LEASE 1 ; ONCE.WAIT {k} TIMEOUT 30"},
	"once.status":             {"ONCE.STATUS {k}", "ONCE.CLAIM {k} ; ONCE.STATUS {k}"},
	"once.wait":               {"ONCE.WAIT {k} TIMEOUT 20", "ONCE.CLAIM {k} LEASE 1000 ; ONCE.WAIT {k} TIMEOUT 20"},
	"persist":                 {"SET {k} 1 EX 100 ; PERSIST {k}"},
	"pexpire":                 {"SET {k} 1 ; PEXPIRE {k} 100000"},
	"pexpireat":               {"SET {k} 1 ; PEXPIREAT {k} 1"},
	"pexpiretime":             {"PEXPIRETIME {k}"},
	"ping":                    {"PING", "PING hi"},
	"psetex":                  {"PSETEX {k} 100000 v"},
	"psubscribe":              {"PSUBSCRIBE {k}* ; PUBLISH {k}x hi ; PUNSUBSCRIBE"},
	"publish":                 {"PUBLISH {k} hi", "SUBSCRIBE {k} ; PUBLISH {k} self ; UNSUBSCRIBE"},
	"pubsub":                  {"PUBSUB"},
	"pubsub|channels":         {"PUBSUB CHANNELS", "SUBSCRIBE {k} ; UNSUBSCRIBE ; PUBSUB CHANNELS live*"},
	"pubsub|help":             {"PUBSUB HELP"},
	"pubsub|numpat":           {"PUBSUB NUMPAT"},
	"pubsub|numsub":           {"PUBSUB NUMSUB {k} nochannel"},
	"pubsub|shardchannels":    {"PUBSUB SHARDCHANNELS", "PUBSUB SHARDCHANNELS live*"},
	"pubsub|shardnumsub":      {"PUBSUB SHARDNUMSUB {k}"},
	"punsubscribe":            {"PUNSUBSCRIBE", "PSUBSCRIBE a* b* ; PUNSUBSCRIBE a* ; PUNSUBSCRIBE"},
	"pttl":                    {"PTTL {k}"},
	"quit":                    {"QUIT"},
	"randomkey":               {"RANDOMKEY"},
	"copy":                    {"SET {k} 1 EX 100 ; COPY {k} {k}:c REPLACE", "SET {k} 1 ; COPY {k} {k} DB 2 REPLACE ; SELECT 2 ; DEL {k} ; SELECT 0"},
	"latency":                 {"LATENCY"},
	"latency|doctor":          {"LATENCY DOCTOR"},
	"latency|graph":           {"LATENCY GRAPH command"},
	"latency|help":            {"LATENCY HELP"},
	"latency|histogram":       {"LATENCY HISTOGRAM", "LATENCY HISTOGRAM get set nosuch"},
	"latency|history":         {"LATENCY HISTORY command"},
	"latency|latest":          {"LATENCY LATEST"},
	"latency|reset":           {"LATENCY RESET", "LATENCY RESET command"},
	"lolwut":                  {"LOLWUT", "LOLWUT VERSION 5"},
	"lcs":                     {"SET {k} ohmytext ; LCS {k} {k} IDX MINMATCHLEN 2 WITHMATCHLEN", "LCS {k} nokey LEN"},
	"memory":                  {"MEMORY"},
	"memory|doctor":           {"MEMORY DOCTOR"},
	"memory|help":             {"MEMORY HELP"},
	"memory|malloc-stats":     {"MEMORY MALLOC-STATS"},
	"memory|purge":            {"MEMORY PURGE"},
	"memory|stats":            {"MEMORY STATS"},
	"memory|usage":            {"SET {k} v ; MEMORY USAGE {k} SAMPLES 0", "MEMORY USAGE nokey"},
	"monitor":                 {"MONITOR ; PING ; GET {k}", "MONITOR ; RESET ; GET {k}", "MONITOR ; QUIT"},
	"move":                    {"SET {k} 1 ; MOVE {k} 4 ; SELECT 4 ; MOVE {k} 0 ; SELECT 0", "MOVE {k} 0"},
	"swapdb":                  {"SELECT 5 ; SET {k} 1 ; SWAPDB 5 6 ; SELECT 6 ; GET {k} ; SWAPDB 6 5 ; SELECT 0", "SWAPDB 6 6"},
	"object":                  {"OBJECT"},
	"object|encoding":         {"SET {k} 12 ; OBJECT ENCODING {k}", "OBJECT ENCODING nokey"},
	"object|freq":             {"OBJECT FREQ {k}"},
	"object|help":             {"OBJECT HELP"},
	"object|idletime":         {"SET {k} v ; OBJECT IDLETIME {k}"},
	"object|refcount":         {"SET {k} v ; OBJECT REFCOUNT {k}"},
	"rename":                  {"SET {k} 1 ; RENAME {k} {k}:b"},
	"renamenx":                {"SET {k} 1 ; RENAMENX {k} {k}:b"},
	"reset":                   {"RESET"},
	"role":                    {"ROLE"},
	"restore":                 {"RESTORE {k} 0 " + liveRestorePayload + " REPLACE ; GET {k}", "RESTORE {k} 100000 junk"},
	"save":                    {"SAVE"},
	"scan":                    {"SCAN 0", "SCAN 0 MATCH * COUNT 100 TYPE string"},
	"select":                  {"SELECT 3 ; SET {k} 1 ; SELECT 0"},
	"set":                     {"SET {k} v", "SET {k} v NX GET EX 100", "SET {k} v XX KEEPTTL"},
	"setex":                   {"SETEX {k} 100 v"},
	"setnx":                   {"SETNX {k} v"},
	"setrange":                {"SETRANGE {k} 5 x"},
	"slowlog":                 {"SLOWLOG"},
	"slowlog|get":             {"SLOWLOG GET 5"},
	"slowlog|help":            {"SLOWLOG HELP"},
	"slowlog|len":             {"SLOWLOG LEN"},
	"slowlog|reset":           {"SLOWLOG RESET"},
	"spublish":                {"SPUBLISH {k} hi", "SSUBSCRIBE {k} ; SPUBLISH {k} self ; SUNSUBSCRIBE"},
	"ssubscribe":              {"SSUBSCRIBE {k} ; SUNSUBSCRIBE {k}", "SSUBSCRIBE {k} ; QUIT"},
	"strlen":                  {"STRLEN {k}"},
	"sadd":                    {"SADD {k} 1 2 a"},
	"srem":                    {"SADD {k} 1 2 ; SREM {k} 1 3"},
	"smembers":                {"SADD {k} b a ; SMEMBERS {k}"},
	"sismember":               {"SADD {k} a ; SISMEMBER {k} a"},
	"smismember":              {"SADD {k} a ; SMISMEMBER {k} a b"},
	"scard":                   {"SADD {k} a ; SCARD {k}"},
	"spop":                    {"SADD {k} 1 2 3 ; SPOP {k} ; SPOP {k} 5"},
	"srandmember":             {"SADD {k} 1 2 3 ; SRANDMEMBER {k} ; SRANDMEMBER {k} -5"},
	"smove":                   {"SADD {k} a ; SMOVE {k} {k}:2 a"},
	"sinter":                  {"SADD {k} a b ; SINTER {k} {k}:2"},
	"sinterstore":             {"SADD {k} a b ; SINTERSTORE {k}:3 {k} {k}"},
	"sintercard":              {"SADD {k} a b ; SINTERCARD 2 {k} {k} LIMIT 1"},
	"sunion":                  {"SADD {k} a ; SUNION {k} {k}:2"},
	"sunionstore":             {"SADD {k} a ; SUNIONSTORE {k}:3 {k} {k}:2"},
	"sdiff":                   {"SADD {k} a b ; SDIFF {k} {k}:2"},
	"sdiffstore":              {"SADD {k} a b ; SDIFFSTORE {k}:3 {k} {k}:2"},
	"sscan":                   {"SADD {k} a b 1 ; SSCAN {k} 0 MATCH * COUNT 1"},
	"subscribe":               {"SUBSCRIBE {k} ; UNSUBSCRIBE {k}", "SUBSCRIBE {k} ; RESET", "SUBSCRIBE {k} ; QUIT"},
	"sunsubscribe":            {"SUNSUBSCRIBE", "SSUBSCRIBE {k} a ; SUNSUBSCRIBE a ; SUNSUBSCRIBE"},
	"substr":                  {"SUBSTR {k} 0 2"},
	"time":                    {"TIME"},
	"touch":                   {"TOUCH {k} nokey"},
	"ttl":                     {"TTL {k}"},
	"type":                    {"TYPE {k}"},
	"unlink":                  {"SET {k} 1 ; UNLINK {k}"},
	"unsubscribe":             {"UNSUBSCRIBE", "SUBSCRIBE {k} {k}:b ; GET {k} ; PING ; UNSUBSCRIBE {k} ; UNSUBSCRIBE"},
	"unwatch":                 {"WATCH {k} ; UNWATCH"},
	"wait":                    {"WAIT 0 0", "WAIT 1 20"},
	"watch":                   {"WATCH {k} ; MULTI ; GET {k} ; EXEC"},
	// SHUTDOWN ends the server: TestShutdown* test it; inside MULTI it is
	// refused, which the multi contexts below check.
	"shutdown": {"!multi SHUTDOWN NOSAVE"},
}

// liveRestorePayload is a DUMP payload of a string that liveSplit keeps
// in one piece: of RDB version 8 (10, Redis 7.0's, is a newline) and with
// a checksum holding no space and no ';'.
var liveRestorePayload = func() string {
	for i := 0; ; i++ {
		v := "v" + strconv.Itoa(i)
		p := rdbPayload("\x00"+string(rune(len(v)))+v, 8)
		if f := strings.Fields(p); len(f) == 1 && f[0] == p && !strings.Contains(p, ";") {
			return p
		}
	}
}()

// liveContexts put a step among other commands: before and after it,
// in one write.
var liveContexts = []struct {
	name          string
	before, after string
}{
	{"alone", "", ""},
	{"pipeline", "SET p1 1 ; GET p1 ; INCR p2 ; GET nokey", "INCR p2 ; GET p1"},
	{"long pipeline", strings.Repeat("INCR p3 ; GET p3 ; ", 12), strings.Repeat("SET p4 x ; GET p4 ; ", 12)},
	{"resp3 pipeline", "HELLO 3 ; SET p1 1 ; GET p1", "GET p1 ; INCR p2"},
	{"multi", "MULTI ; SET m1 1 ; GET m1", "INCR m2 ; EXEC"},
	{"watch multi", "WATCH m1 ; MULTI ; INCR m1", "GET m1 ; EXEC"},
}

// liveSplit turns "A b ; C d" into commands.
func liveSplit(s string) [][]string {
	var cmds [][]string
	for _, part := range strings.Split(s, ";") {
		if f := strings.Fields(part); len(f) > 0 {
			cmds = append(cmds, f)
		}
	}
	return cmds
}

// liveFill replaces {k} and {tok} in cmds.
func liveFill(cmds [][]string, key, tok string) [][]string {
	out := make([][]string, len(cmds))
	for i, c := range cmds {
		out[i] = make([]string, len(c))
		for j, a := range c {
			a = strings.ReplaceAll(a, "{k}", key)
			out[i][j] = strings.ReplaceAll(a, "{tok}", tok)
		}
	}
	return out
}

func TestEveryCommandLeavesTheServerLive(t *testing.T) {
	addr := onceServer(t, "--backup-dir", t.TempDir())
	admin := DialRaw(t, addr)

	// Every command the server lists has steps here.
	list := admin.ReadFrameAfterDo(t, "COMMAND", "LIST")
	var missing []string
	for _, e := range list.Elems {
		if _, ok := liveSteps[strings.ToLower(e.Str)]; !ok {
			missing = append(missing, e.Str)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Fatalf("commands without steps in liveSteps: %v", missing)
	}
	checkLive(t, addr)
}

// The proxy serves the same steps (forwarded, answered itself, or
// refused) over a real redis-server, and must stay as live.
func TestProxyLeavesTheServerLive(t *testing.T) {
	checkLive(t, startProxy(t, "redis://"+testredis.Standalone(t).Addr()).Addr)
}

// checkLive runs every step of liveSteps in every context of
// liveContexts on addr, each on a new connection, while two clients
// write, and checks after each that another client is still served.
func checkLive(t *testing.T, addr string) {
	admin := DialRaw(t, addr)

	// Two clients write all the time; each reply must come within the
	// connection's timeout.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	// bgErr keeps the first error of a background writer.
	var bgErr atomic.Pointer[error]
	bgFail := func(err error) { bgErr.CompareAndSwap(nil, &err) }
	bgFailed := func() error {
		if p := bgErr.Load(); p != nil {
			return *p
		}
		return nil
	}
	var bgRounds atomic.Int64
	for i := 0; i < 2; i++ {
		c := DialRaw(t, addr)
		key := "bg:" + strconv.Itoa(i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out []byte
			for j := 0; j < 20; j++ {
				out = append(out, EncodeCommand("INCR", key)...)
			}
			out = append(out, EncodeCommand("GET", key)...)
			last := int64(0)
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := c.TrySend(out); err != nil {
					bgFail(fmt.Errorf("background writer: send: %w", err))
					return
				}
				for j := 0; j <= 20; j++ {
					f, err := c.TryReadFrame()
					if err != nil {
						bgFail(fmt.Errorf("background writer: read: %w", err))
						return
					}
					// FLUSHALL, among the steps, may reset the count.
					if n, ok := f.Int(); j < 20 && (!ok || (n != last+1 && n != 1)) {
						bgFail(fmt.Errorf("background writer: INCR %s answered %q after %d", key, f.Raw, last))
						return
					} else if j < 20 {
						last = n
					}
				}
				bgRounds.Add(1)
			}
		}()
	}

	// The writers stop before the test ends, failed or not.
	stopWriters := sync.OnceFunc(func() { close(stop); wg.Wait() })
	defer stopWriters()
	cases := liveCases()
	for i, lc := range cases {
		key := fmt.Sprintf("live:%d", i)
		if err := liveRun(addr, key, lc, i, true); err != nil {
			t.Fatalf("%s: %v", lc, err)
		}
		// Another client is still served.
		probe := strconv.Itoa(i)
		if f, err := admin.TryReadFrameAfter(EncodeCommand("SET", "live:probe", probe)); err != nil || f.Str != "OK" {
			t.Fatalf("after %s, another client's SET: %v %v", lc, f, err)
		}
		if f, err := admin.TryReadFrameAfter(EncodeCommand("GET", "live:probe")); err != nil || f.Str != probe {
			t.Fatalf("after %s, another client's GET: %v %v", lc, f, err)
		}
		if err := bgFailed(); err != nil {
			t.Fatalf("after %s: %v", lc, err)
		}
	}
	stopWriters()
	if err := bgFailed(); err != nil {
		t.Fatal(err)
	}
	if bgRounds.Load() == 0 {
		t.Fatal("the background writers finished no round")
	}
	t.Logf("%d steps in context; the background writers ran %d pipelines", len(cases), bgRounds.Load())
}

// liveCase is a step of liveSteps in one of liveContexts.
type liveCase struct {
	name, step, ctx string
	before, after   string
}

func (lc liveCase) String() string {
	return fmt.Sprintf("%s [%s] in context %q", lc.name, lc.step, lc.ctx)
}

// liveCases lists every step in every context, in a fixed order.
func liveCases() []liveCase {
	names := make([]string, 0, len(liveSteps))
	for name := range liveSteps {
		names = append(names, name)
	}
	sort.Strings(names)
	var out []liveCase
	for _, name := range names {
		for _, step := range liveSteps[name] {
			onlyMulti := strings.HasPrefix(step, "!multi ")
			step = strings.TrimPrefix(step, "!multi ")
			for _, ctx := range liveContexts {
				if onlyMulti && !strings.Contains(ctx.name, "multi") {
					continue
				}
				out = append(out, liveCase{name: name, step: step, ctx: ctx.name, before: ctx.before, after: ctx.after})
			}
		}
	}
	return out
}

// Many clients run the steps at once, on a few shared keys, so that
// their pipelines, transactions, blocked ONCE waits and claims meet:
// none may wait for ever on another (KV-1), and every client stays served.
func TestCommandsAtOnceLeaveTheServerLive(t *testing.T) {
	for _, tc := range []struct {
		name  string
		start func(t *testing.T) string
	}{
		{"everysec", func(t *testing.T) string { return onceServer(t, "--backup-dir", t.TempDir()) }},
		{"always", func(t *testing.T) string {
			return onceServer(t, "--backup-dir", t.TempDir(), "--appendfsync", "always")
		}},
		{"proxy", func(t *testing.T) string { return startProxy(t, "redis://"+testredis.Standalone(t).Addr()).Addr }},
	} {
		t.Run(tc.name, func(t *testing.T) { runAtOnce(t, tc.start(t)) })
	}
}

// runAtOnce runs the cases from several clients at once on addr.
func runAtOnce(t *testing.T, addr string) {
	cases := liveCases()
	const workers, each = 8, 150
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	var next atomic.Int64
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < each; j++ {
				n := int(next.Add(1))
				// A fixed walk through the cases, spread over the workers.
				lc := cases[(n*7919)%len(cases)]
				key := fmt.Sprintf("live:%d", n%6)
				if err := liveRun(addr, key, lc, n, false); err != nil {
					errs <- fmt.Errorf("%s: %w", lc, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if f, err := DialRaw(t, addr).TryReadFrameAfter(EncodeCommand("PING")); err != nil || f.Str != "PONG" {
		t.Fatalf("PING after the workers: %v %v", f, err)
	}
}

// liveRun runs lc's step between its context's commands on a new
// connection, in one write, and reads until the marker ECHOed after them
// (or, for QUIT, until the server closes the connection). With strict,
// the setup claim of a step that needs a token must succeed; without
// (keys shared with other clients), the step uses a stale token instead.
func liveRun(addr, key string, lc liveCase, n int, strict bool) error {
	c, err := dialRaw(addr)
	if err != nil {
		return fmt.Errorf("dial: %w", err)
	}
	defer c.Close()
	c.Timeout = 10 * time.Second
	step, before, after := lc.step, lc.before, lc.after
	tok := "1"
	if strings.Contains(step, "{tok}") {
		f, err := c.TryReadFrameAfter(EncodeCommand("ONCE.CLAIM", key, "LEASE", "10000"))
		if err != nil {
			return fmt.Errorf("setup claim: %w", err)
		}
		switch {
		case len(f.Elems) == 2 && f.Elems[0].Str == "claimed":
			tok = f.Elems[1].Str
		case strict:
			return fmt.Errorf("setup claim answered %q", f.Raw)
		}
	}
	marker := "live-end-" + strconv.Itoa(n)
	cmds := liveSplit(before)
	cmds = append(cmds, liveFill(liveSplit(step), key, tok)...)
	cmds = append(cmds, liveSplit(after)...)
	quits := strings.Contains(strings.ToUpper(step), "QUIT")
	if !quits {
		cmds = append(cmds, []string{"ECHO", marker})
	}
	var out []byte
	for _, args := range cmds {
		out = append(out, EncodeCommand(args...)...)
	}
	if err := c.TrySend(out); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	var got []string
	for {
		f, err := c.TryReadFrame()
		if quits && (errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed)) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("after %d replies %q: %w", len(got), got, err)
		}
		if !quits && (f.Type == '$' || f.Type == '+') && f.Str == marker {
			return nil
		}
		got = append(got, string(f.Raw))
	}
}
